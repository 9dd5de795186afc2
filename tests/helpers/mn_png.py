#!/usr/bin/env python3
"""mn_png.py FILE [X0 Y0 X1 Y1]: prints "W H" of a PNG (8-bit RGB/RGBA), and
with a box the count of its coloured pixels there (channels differing by
more than 60): the chart's series are coloured, its grid and frame grey."""
import struct, sys, zlib

def read(path):
    d = open(path, 'rb').read()
    assert d[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    pos, idat = 8, b''
    while pos < len(d):
        n, kind = struct.unpack('>I4s', d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6), 'only 8-bit RGB(A)'
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows

w, h, bpp, rows = read(sys.argv[1])
if len(sys.argv) == 6:
    x0, y0, x1, y1 = map(int, sys.argv[2:])
    px = lambda x, y: rows[y][x * bpp:x * bpp + 3]
    n = sum(1 for y in range(y0, y1) for x in range(x0, x1) if max(px(x, y)) - min(px(x, y)) > 60)
    print(w, h, n)
else:
    print(w, h)

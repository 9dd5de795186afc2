#!/usr/bin/python3
"""The PyTorch DDP peer of bench/speed.sh: trains the network of a Darknet
classifier cfg (cfg/fashion.cfg: convolutional with batch_normalize, maxpool,
connected, softmax; leaky is Darknet's 0.1 slope) on Fashion-MNIST for
--iters updates on --procs processes (gloo), `batch` images per process per
update, one thread per process, SGD with the cfg's learning_rate, momentum,
decay and poly policy.

The images are the ones build/fashion's PNGs are made from: the IDX files
(tools/mn_fashion.c's input), decoded once into memory as torchvision's
FashionMNIST does, gray replicated to the cfg's channels (Darknet's
load_image_color does the same); process r takes every procs-th image from r.

Prints one line, `ddp: ...`. Without torch it prints why and exits 77
(skipped, not passed)."""
import argparse
import gzip
import os
import struct
import sys
import time


def parse_cfg(path):
    """[(section, {key: value})] in file order."""
    sections = []
    for raw in open(path):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        if line.startswith('['):
            sections.append((line.strip('[]'), {}))
        elif '=' in line:
            k, v = line.split('=', 1)
            sections[-1][1][k.strip()] = v.strip()
    return sections


def build_net(torch, sections):
    nn = torch.nn
    net = dict(sections[0][1])
    c, h, w = int(net['channels']), int(net['height']), int(net['width'])
    layers = []
    for kind, o in sections[1:]:
        if kind == 'convolutional':
            f, k, s = int(o['filters']), int(o.get('size', 1)), int(o.get('stride', 1))
            bn = o.get('batch_normalize', '0') == '1'
            pad = k // 2 if o.get('pad', '0') == '1' else int(o.get('padding', 0))
            layers.append(nn.Conv2d(c, f, k, s, pad, bias=not bn))
            if bn:
                layers.append(nn.BatchNorm2d(f))
            c, h, w = f, (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
        elif kind == 'maxpool':
            k, s = int(o.get('size', 2)), int(o.get('stride', 2))
            layers.append(nn.MaxPool2d(k, s))
            h, w = (h - k) // s + 1, (w - k) // s + 1
        elif kind == 'connected':
            layers.append(nn.Flatten())
            layers.append(nn.Linear(c * h * w, int(o['output'])))
            c, h, w = int(o['output']), 1, 1
        elif kind in ('softmax', 'distributed'):
            continue   # softmax: in the loss; distributed: darknet-mn's
        else:
            raise SystemExit('ddp: %s: layer [%s] is not supported here' % (sys.argv[0], kind))
        act = o.get('activation', 'linear')
        if kind != 'maxpool' and act == 'leaky':
            layers.append(nn.LeakyReLU(0.1))
        elif kind != 'maxpool' and act == 'relu':
            layers.append(nn.ReLU())
        elif kind != 'maxpool' and act != 'linear':
            raise SystemExit('ddp: activation %s is not supported here' % act)
    return nn.Sequential(*layers), net


def load_idx(torch, folder, channels):
    with gzip.open(os.path.join(folder, 'train-images-idx3-ubyte.gz')) as f:
        _, n, rows, cols = struct.unpack('>IIII', f.read(16))
        x = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).view(n, 1, rows, cols)
    with gzip.open(os.path.join(folder, 'train-labels-idx1-ubyte.gz')) as f:
        f.read(8)
        y = torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).long()
    return x.float().div_(255).expand(n, channels, rows, cols).contiguous(), y


def worker(rank, a):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', str(a.port))
    dist.init_process_group('gloo', rank=rank, world_size=a.procs)
    torch.manual_seed(1)
    model, net = build_net(torch, parse_cfg(a.cfg))
    batch = int(net['batch'])
    x, y = load_idx(torch, a.data, int(net['channels']))
    x, y = x[rank::a.procs], y[rank::a.procs]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    lr = float(net['learning_rate'])
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=float(net.get('momentum', 0.9)),
                          weight_decay=float(net.get('decay', 0.0005)))
    power = float(net.get('power', 4))
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    t0 = time.time()
    for it in range(a.iters):
        for group in opt.param_groups:   # Darknet's poly policy over --iters
            group['lr'] = lr * (1 - it / a.iters) ** power
        idx = torch.randint(0, x.shape[0], (batch,), generator=g)
        opt.zero_grad()
        loss = loss_fn(ddp(x[idx]), y[idx])
        loss.backward()
        opt.step()
    if rank == 0:
        dt = time.time() - t0
        print('ddp: %d process%s, %d updates of %d x %d images in %.2f s (loop only), loss %.3f'
              % (a.procs, 'es' if a.procs > 1 else '', a.iters, batch, a.procs, dt, loss.item()), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--cfg', default='cfg/fashion.cfg')
    p.add_argument('--data', default='/usr/share/datasets/fashion-mnist')
    p.add_argument('--procs', type=int, default=1)
    p.add_argument('--iters', type=int, default=40)
    p.add_argument('--port', type=int, default=29517)
    a = p.parse_args()
    try:
        import torch.multiprocessing as mp
    except ImportError as e:
        print('ddp: skipped: %s (Debian: apt-get install python3-torch)' % e, flush=True)
        sys.exit(77)
    os.environ.setdefault('GLOO_SOCKET_IFNAME', 'lo')   # gloo picks no interface on these machines otherwise
    if a.procs == 1:
        worker(0, a)
    else:
        mp.start_processes(worker, args=(a,), nprocs=a.procs, start_method='fork')


if __name__ == '__main__':
    main()

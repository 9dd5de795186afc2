/* Darknet's utilities the plugin uses, the same on every base; each adapter
 * re-exports them since hank-ai's headers are C++. */
#ifndef MN_BASE_UTIL_H
#define MN_BASE_UTIL_H

#include "base/mn_base.h"

/* A label file's box: class, centre and size relative to the image. */
typedef struct {
    int id;
    float x, y, w, h;
} mn_truth;

/* Images as the base makes and decodes them. */
mn_image mn_base_make_image(int w, int h, int c);
void mn_base_free_image(mn_image im);
/* load_image_color: resized to w x h unless 0; the image hook goes first. */
mn_image mn_base_load_image(const char *path, int w, int h);
mn_image mn_base_resize_image(mn_image im, int w, int h);
mn_image mn_base_resize_min(mn_image im, int min);
mn_image mn_base_crop_image(mn_image im, int dx, int dy, int w, int h);
mn_image mn_base_letterbox_image(mn_image im, int w, int h);
/* A file's interleaved 8-bit samples, to free(); NULL with a reason. */
unsigned char *mn_base_decode(const char *path, int channels, int *w, int *h, int *c, const char **reason);

/* A data cfg's options and a file's lines (each and the array to free());
 * NULL where the file cannot be read. */
list *mn_base_read_options(const char *path);
char *mn_base_option(list *options, const char *key);
void mn_base_free_options(list *options);
char **mn_base_read_lines(const char *path, int *n);
/* basecfg: "cfg/yolo.cfg" -> "yolo", to free(). */
char *mn_base_cfg_name(const char *cfgfile);
/* find_replace of each from[i] by to[i] in turn, into out (4096 bytes). */
void mn_base_replace(const char *path, const char *const *from, const char *const *to, int n, char *out);

/* A label file's boxes (to free(), through the line hook), and box helpers. */
mn_truth *mn_base_read_boxes(const char *path, int *n);
float mn_base_box_iou(box a, box b);
void mn_base_nms_obj(detection *dets, int n, int classes, float thresh);
void mn_base_free_detections(detection *dets, int n);
void mn_base_top_k(float *a, int n, int k, int *index);

#endif

/* Darknet's own utilities the plugin uses: images, text files, boxes and
 * top-k. They do the same on every base (hank-ai's decodes with OpenCV);
 * they are here, apart from the interface of mn_base.h, because hank-ai's
 * headers are C++ and the plugin is C: each adapter re-exports them. */
#ifndef MN_BASE_UTIL_H
#define MN_BASE_UTIL_H

#include "mn_base.h"

/* A truth box of an image's label file: its class, centre and size
 * relative to the image (the plugin's own: a base's box_label is not read). */
typedef struct {
    int id;
    float x, y, w, h;
} mn_truth;

/* Images as the base makes them (floats in [0, 1], channel planes). The C
 * bases decode with stb; a C++ base may use OpenCV, hence decode here. */
mn_image mn_base_make_image(int w, int h, int c);
void mn_base_free_image(mn_image im);
/* A colour image from a file, resized to w x h unless 0 (load_image_color:
 * the load_image hook above answers first). */
mn_image mn_base_load_image(const char *path, int w, int h);
mn_image mn_base_resize_image(mn_image im, int w, int h);
mn_image mn_base_resize_min(mn_image im, int min);
mn_image mn_base_crop_image(mn_image im, int dx, int dy, int w, int h);
mn_image mn_base_letterbox_image(mn_image im, int w, int h);
/* A file's interleaved 8-bit samples (channels of them a pixel, or its own
 * when 0, in *c), to free(); NULL with the decoder's reason (or NULL). */
unsigned char *mn_base_decode(const char *path, int channels, int *w, int *h, int *c, const char **reason);

/* Darknet's text files: a data cfg's key=value options, kept as its list
 * (mn_base_option: the value of key, the last one given, or NULL), and the
 * lines of a file (labels, names) as an array of n strings, each and the
 * array to free(). NULL when the file cannot be read. */
list *mn_base_read_options(const char *path);
char *mn_base_option(list *options, const char *key);
void mn_base_free_options(list *options);
char **mn_base_read_lines(const char *path, int *n);
/* A cfg's name without folder and extension (basecfg: "cfg/yolo.cfg" -> "yolo"), to free(). */
char *mn_base_cfg_name(const char *cfgfile);
/* The base's rule from an image's path to its label file's (find_replace
 * of from[i] by to[i] in turn), into out (4096 bytes). */
void mn_base_replace(const char *path, const char *const *from, const char *const *to, int n, char *out);

/* Boxes: an image's label file as truth boxes (to free(); *n of them,
 * through the line hook), the IoU of two boxes, objectness NMS (recall),
 * and the detections' and a top-k's helpers. */
mn_truth *mn_base_read_boxes(const char *path, int *n);
float mn_base_box_iou(box a, box b);
void mn_base_nms_obj(detection *dets, int n, int classes, float thresh);
void mn_base_free_detections(detection *dets, int n);
void mn_base_top_k(float *a, int n, int k, int *index);

#endif

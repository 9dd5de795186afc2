/* hank-ai's plain C structs that its C header leaves out (darknet_internal.hpp,
 * list.hpp), copied for the plugin's C files. No include guard and no
 * include on purpose: mn_base_hankai.cpp includes it a second time inside a
 * namespace, to static_assert every size and offset against the fork's. */
typedef struct matrix {
    int rows;
    int cols;
    float **vals;
} matrix;

typedef struct data {
    int w;
    int h;
    matrix X;
    matrix y;
    int shallow;
    int *num_boxes;
    box **boxes;
    uint64_t nanoseconds_to_load;
} data;

typedef struct box_label {
    int id;
    int track_id;
    float x, y, w, h;
    float left, right, top, bottom;
} box_label;

typedef struct node {
    void *val;
    struct node *next;
    struct node *prev;
} node;

typedef struct list {
    int size;
    node *front;
    node *back;
} list;

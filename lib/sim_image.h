/*
 * sim_image.h - inside the simulator's reader of module images (private to
 * sim_image.c, sim_ptx.c and sim_elf.c; sim.h declares what the rest of the
 * simulator calls).  sim_image.c builds the result and reads fat binaries,
 * sim_ptx.c reads PTX text and sim_elf.c reads cubins.  Every call answers
 * a CUresult code.
 */
#ifndef GM_SIM_IMAGE_H
#define GM_SIM_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "sim.h"

/* An image being read: the result, and the log a failure is written to. */
typedef struct gm_sim_parse {
    gm_sim_image *img;
    size_t cap_funcs, cap_vars;
    char *log;
    size_t log_size;
} gm_sim_parse;

/* Writes "gpumem sim: " and the message into p's log; returns rc. */
int gm_sim_fail(gm_sim_parse *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Whether img has a kernel or a variable named name[0, n). */
bool gm_sim_name_taken(const gm_sim_image *img, const char *name, size_t n);

/* Adds a kernel named name[0, n) to p's image. */
int gm_sim_add_func(gm_sim_parse *p, const char *name, size_t n, size_t shared_bytes, size_t local_bytes,
                    int num_regs);

/* Adds a variable named name[0, n) to p's image; takes init (may be NULL)
 * over. */
int gm_sim_add_var(gm_sim_parse *p, const char *name, size_t n, size_t size, bool is_const, unsigned char *init);

/* Reads PTX text[0, len) (sim_ptx.c). */
int gm_sim_parse_ptx(gm_sim_parse *p, const char *text, size_t len);

/* Whether image[0, size) is an ELF file (sim_elf.c). */
bool gm_sim_is_elf(const void *image, size_t size);

/* Reads the cubin b[0, size) for a device of arch (sim_elf.c). */
int gm_sim_parse_elf(gm_sim_parse *p, const unsigned char *b, size_t size, const gm_sim_arch *arch);

#endif /* GM_SIM_IMAGE_H */

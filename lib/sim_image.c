/*
 * sim_image.c - the simulator's reader of module images: what
 * cuModuleLoadData would find in PTX text, a cubin or a fat binary, so that
 * modules, their kernels and their __device__ / __constant__ variables exist
 * on the simulator (sim.h says what is simulated and what is not).
 *
 * Nothing here compiles or runs code.  This file builds the result and
 * reads fat binaries; the PTX reader is sim_ptx.c, the cubin reader
 * sim_elf.c (sim_image.h is what they share).
 */
#include "config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cuda_abi.h"
#include "sim_image.h"

/* ------------------------------------------------------------- results -- */

int gm_sim_fail(gm_sim_parse *p, int rc, const char *fmt, ...)
{
    if (p->log != NULL && p->log_size > 0) {
        int n = snprintf(p->log, p->log_size, "gpumem sim: ");
        if (n >= 0 && (size_t)n < p->log_size) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->log + n, p->log_size - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

bool gm_sim_name_taken(const gm_sim_image *img, const char *name, size_t n)
{
    for (size_t i = 0; i < img->nfuncs; i++)
        if (strlen(img->funcs[i].name) == n && memcmp(img->funcs[i].name, name, n) == 0)
            return true;
    for (size_t i = 0; i < img->nvars; i++)
        if (strlen(img->vars[i].name) == n && memcmp(img->vars[i].name, name, n) == 0)
            return true;
    return false;
}

int gm_sim_add_func(gm_sim_parse *p, const char *name, size_t n, size_t shared_bytes, size_t local_bytes,
                    int num_regs)
{
    gm_sim_image *img = p->img;
    if (img->nfuncs == p->cap_funcs) {
        size_t cap = p->cap_funcs ? 2 * p->cap_funcs : 8;
        gm_sim_image_func *v = realloc(img->funcs, cap * sizeof *v);
        if (v == NULL)
            return GM_CUDA_ERROR_OUT_OF_MEMORY;
        img->funcs = v;
        p->cap_funcs = cap;
    }
    char *copy = dup_n(name, n);
    if (copy == NULL)
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    img->funcs[img->nfuncs++] = (gm_sim_image_func){copy, shared_bytes, local_bytes, num_regs};
    return GM_CUDA_SUCCESS;
}

int gm_sim_add_var(gm_sim_parse *p, const char *name, size_t n, size_t size, bool is_const, unsigned char *init)
{
    gm_sim_image *img = p->img;
    if (img->nvars == p->cap_vars) {
        size_t cap = p->cap_vars ? 2 * p->cap_vars : 8;
        gm_sim_image_var *v = realloc(img->vars, cap * sizeof *v);
        if (v == NULL) {
            free(init);
            return GM_CUDA_ERROR_OUT_OF_MEMORY;
        }
        img->vars = v;
        p->cap_vars = cap;
    }
    char *copy = dup_n(name, n);
    if (copy == NULL) {
        free(init);
        return GM_CUDA_ERROR_OUT_OF_MEMORY;
    }
    img->vars[img->nvars++] = (gm_sim_image_var){copy, size, is_const, init};
    if (is_const)
        img->const_bytes += size;
    return GM_CUDA_SUCCESS;
}

void gm_sim_image_free(gm_sim_image *img)
{
    for (size_t i = 0; i < img->nfuncs; i++)
        free(img->funcs[i].name);
    for (size_t i = 0; i < img->nvars; i++) {
        free(img->vars[i].name);
        free(img->vars[i].init);
    }
    free(img->funcs);
    free(img->vars);
    memset(img, 0, sizeof *img);
}

/* -------------------------------------------------------------- fatbin -- */

enum { FAT_PTX = 1, FAT_ELF = 2, FAT_HEADER = 16, FAT_ENTRY = 64 };
#define FAT_COMPRESSED (UINT64_C(0x2000) | UINT64_C(0x8000))

static int parse_ptx_bytes(gm_sim_parse *p, const unsigned char *b, size_t size)
{
    const unsigned char *nul = memchr(b, '\0', size);
    return gm_sim_parse_ptx(p, (const char *)b, nul != NULL ? (size_t)(nul - b) : size);
}

static int parse_fatbin(gm_sim_parse *p, const unsigned char *b, size_t size, const gm_sim_arch *arch)
{
    if (size < FAT_HEADER)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: shorter than its header");
    uint64_t hsize = rd16(b + 6), fat = rd64(b + 8);
    if (rd16(b + 4) != 1 || hsize < FAT_HEADER || hsize > size || fat > size - hsize)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: bad header (version %u, header %llu bytes, "
                           "%llu bytes of entries, image %zu bytes)", rd16(b + 4), (unsigned long long)hsize,
                           (unsigned long long)fat, size);
    int cc = arch->major * 10 + arch->minor;
    const unsigned char *best = NULL;
    uint64_t best_size = 0;
    unsigned best_kind = 0, best_arch = 0, entries = 0, compressed = 0;
    uint64_t off = hsize, end = hsize + fat;
    while (off < end) {
        if (end - off < FAT_ENTRY)
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: truncated entry at byte %llu",
                               (unsigned long long)off);
        const unsigned char *e = b + off;
        unsigned kind = rd16(e), earch = rd32(e + 28);
        uint64_t ehdr = rd32(e + 4), payload = rd64(e + 8), flags = rd64(e + 40);
        if (ehdr < FAT_ENTRY || ehdr > end - off || payload > end - off - ehdr)
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: entry at byte %llu lies outside the image",
                               (unsigned long long)off);
        entries++;
        if (flags & FAT_COMPRESSED) {
            compressed++;
        } else if (kind == FAT_ELF && earch / 10 == (unsigned)arch->major && earch % 10 <= (unsigned)arch->minor) {
            /* a cubin runs on its major version's later minors */
            if (best_kind != FAT_ELF || earch > best_arch) {
                best = e + ehdr, best_size = payload, best_kind = FAT_ELF, best_arch = earch;
            }
        } else if (kind == FAT_PTX && earch <= (unsigned)cc && best_kind != FAT_ELF) {
            /* PTX is compiled for the device by the JIT */
            if (best_kind != FAT_PTX || earch > best_arch)
                best = e + ehdr, best_size = payload, best_kind = FAT_PTX, best_arch = earch;
        }
        off += ehdr + payload;
    }
    if (best_kind == FAT_ELF)
        return gm_sim_parse_elf(p, best, (size_t)best_size, arch);
    if (best_kind == FAT_PTX)
        return parse_ptx_bytes(p, best, (size_t)best_size);
    if (compressed > 0)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: %u of its %u entries are compressed, and the "
                           "simulator does not decompress fat binaries; give it an uncompressed fat binary, or the "
                           "PTX or cubin itself", compressed, entries);
    if (entries > 0)
        return gm_sim_fail(p, GM_CUDA_ERROR_NO_BINARY_FOR_GPU, "fatbin: none of its %u entries is a cubin or PTX "
                           "for %s", entries, arch->name);
    return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "fatbin: no entries");
}

/* ---------------------------------------------------------------- entry -- */

int gm_sim_image_parse(const void *image, size_t size, const gm_sim_arch *arch, gm_sim_image *out,
                       char *log, size_t log_size)
{
    gm_sim_parse p = {.img = out, .log = log, .log_size = log_size};
    memset(out, 0, sizeof *out);
    if (log != NULL && log_size > 0)
        log[0] = '\0';
    if (image == NULL || size == 0)
        return gm_sim_fail(&p, GM_CUDA_ERROR_INVALID_IMAGE, "empty image");
    const unsigned char *b = image;
    int rc;
    if (size >= 4 && rd32(b) == GM_FATBIN_MAGIC)
        rc = parse_fatbin(&p, b, size, arch);
    else if (size >= 4 && rd32_host(b) == GM_FATBINC_WRAPPER_MAGIC)
        rc = gm_sim_fail(&p, GM_CUDA_ERROR_INVALID_IMAGE, "a fatbin wrapper (__fatBinC_Wrapper_t): pass the fat binary "
                         "it points to");
    else if (gm_sim_is_elf(b, size))
        rc = gm_sim_parse_elf(&p, b, size, arch);
    else
        rc = parse_ptx_bytes(&p, b, size);
    if (rc != GM_CUDA_SUCCESS)
        gm_sim_image_free(out);
    return rc;
}

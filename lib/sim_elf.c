/*
 * sim_elf.c - the simulator's reader of cubins, the ELF files of device
 * code: their kernels (with shared memory, registers and frame size) and
 * their __device__ / __constant__ variables (sim_image.c reads the image
 * around it).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cuda_abi.h"
#include "sim_image.h"

/* ----------------------------------------------------------------- ELF -- */

enum {
    SHT_SYMTAB = 2,
    SHT_NOBITS = 8,
    STT_OBJECT = 1,
    STT_FUNC = 2,
    STB_GLOBAL = 1,
    STB_WEAK = 2,
    SHN_LORESERVE = 0xff00,
    SHDR_SIZE = 64,
    SYM_SIZE = 24
};

typedef struct shdr {
    uint32_t name, type;
    uint64_t offset, size;
    uint32_t link;
} shdr;

static shdr section(const unsigned char *b, uint64_t shoff, unsigned i)
{
    const unsigned char *s = b + shoff + (uint64_t)i * SHDR_SIZE;
    return (shdr){rd32(s), rd32(s + 4), rd64(s + 24), rd64(s + 32), rd32(s + 40)};
}

/* The NUL-terminated string at off of section str, or NULL. */
static const char *elf_string(const unsigned char *b, size_t size, const shdr *str, uint64_t off)
{
    if (str->type == SHT_NOBITS || str->offset > size || str->size > size - str->offset || off >= str->size)
        return NULL;
    const char *s = (const char *)b + str->offset + off;
    return memchr(s, '\0', str->size - off) != NULL ? s : NULL;
}

bool gm_sim_is_elf(const void *image, size_t size)
{
    const unsigned char *b = image;
    return size >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
}

/* EIATTR codes of a cubin's .nv.info: per-kernel values keyed by symbol index. */
enum { EIFMT_SVAL = 0x04, EIATTR_FRAME_SIZE = 0x11, EIATTR_REGCOUNT = 0x2f };

/* Reads the register counts and frame sizes of .nv.info into the kernels
 * whose symbol indices are in syms (img->funcs[i] is symbol syms[i]). */
static void read_nv_info(gm_sim_image *img, const uint64_t *syms, const unsigned char *b, const shdr *info)
{
    const unsigned char *q = b + info->offset, *end = q + info->size;
    while (end - q >= 4) {
        unsigned fmt = q[0], attr = q[1];
        size_t len = fmt == EIFMT_SVAL ? rd16(q + 2) : 0;
        if ((size_t)(end - q - 4) < len)
            break;
        if (fmt == EIFMT_SVAL && len == 8 && (attr == EIATTR_REGCOUNT || attr == EIATTR_FRAME_SIZE)) {
            uint32_t sym = rd32(q + 4), value = rd32(q + 8);
            for (size_t i = 0; i < img->nfuncs; i++) {
                if (syms[i] != sym)
                    continue;
                if (attr == EIATTR_REGCOUNT)
                    img->funcs[i].num_regs = value > 255 ? 255 : (int)value;
                else
                    img->funcs[i].local_bytes = value;
            }
        }
        q += 4 + len;
    }
}

int gm_sim_parse_elf(gm_sim_parse *p, const unsigned char *b, size_t size, const gm_sim_arch *arch)
{
    p->img->format = GM_SIM_IMAGE_CUBIN;
    if (size < 64 || b[4] != 2 /* ELFCLASS64 */ || b[5] != 1 /* little-endian */)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: not a 64-bit little-endian ELF file");
    if (rd16(b + 18) != GM_ELF_EM_CUDA)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: ELF machine %u is not EM_CUDA (%d)", rd16(b + 18),
                           GM_ELF_EM_CUDA);
    uint64_t shoff = rd64(b + 40);
    unsigned shentsize = rd16(b + 58), shnum = rd16(b + 60), shstrndx = rd16(b + 62);
    if (shentsize != SHDR_SIZE || shnum == 0 || shstrndx >= shnum || shoff > size ||
        (uint64_t)shnum * SHDR_SIZE > size - shoff)
        return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: bad section header table");
    for (unsigned i = 1; i < shnum; i++) {
        shdr s = section(b, shoff, i);
        if (s.type != SHT_NOBITS && (s.offset > size || s.size > size - s.offset))
            return gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: section %u lies outside the image", i);
    }
    shdr shstr = section(b, shoff, shstrndx);
    /* sm_80 and later reserve shared memory per block for the system; a
     * cubin that says so counts it in its kernels' .nv.shared.<name>
     * sections, and the driver leaves it out of SHARED_SIZE_BYTES */
    size_t reserved = 0;
    for (unsigned j = 1; j < shnum; j++) {
        shdr sh = section(b, shoff, j);
        const char *n = elf_string(b, size, &shstr, sh.name);
        if (n != NULL && strncmp(n, ".nv.shared.reserved.", 20) == 0)
            reserved = (size_t)arch->smem_reserved;
    }
    uint64_t *syms = NULL; /* the symbol index of each kernel */
    bool symtab = false;
    int rc = GM_CUDA_SUCCESS;
    for (unsigned i = 1; i < shnum && rc == GM_CUDA_SUCCESS; i++) {
        shdr st = section(b, shoff, i);
        if (st.type != SHT_SYMTAB)
            continue;
        if (symtab || st.link >= shnum || st.size % SYM_SIZE != 0) {
            rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: bad or second symbol table");
            break;
        }
        symtab = true;
        shdr str = section(b, shoff, st.link);
        if ((syms = calloc((size_t)(st.size / SYM_SIZE) + 1, sizeof *syms)) == NULL) {
            rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        for (uint64_t k = 1; k < st.size / SYM_SIZE && rc == GM_CUDA_SUCCESS; k++) {
            const unsigned char *sym = b + st.offset + k * SYM_SIZE;
            unsigned type = sym[4] & 0xf, bind = sym[4] >> 4, shndx = rd16(sym + 6);
            uint64_t value = rd64(sym + 8), sym_size = rd64(sym + 16);
            if ((type != STT_FUNC && type != STT_OBJECT) || shndx == 0 || shndx >= SHN_LORESERVE)
                continue;
            const char *name = elf_string(b, size, &str, rd32(sym));
            if (shndx >= shnum || name == NULL || name[0] == '\0') {
                rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: symbol %llu has a bad name or section",
                                 (unsigned long long)k);
                break;
            }
            shdr home = section(b, shoff, shndx);
            const char *sname = elf_string(b, size, &shstr, home.name);
            if (sname == NULL) {
                rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: section %u has a bad name", shndx);
                break;
            }
            if (type == STT_FUNC && (bind == STB_GLOBAL || bind == STB_WEAK)) {
                /* a kernel's static shared memory is its .nv.shared.<name> section */
                size_t shared_bytes = 0;
                for (unsigned j = 1; j < shnum; j++) {
                    shdr sh = section(b, shoff, j);
                    const char *n = elf_string(b, size, &shstr, sh.name);
                    if (n != NULL && strncmp(n, ".nv.shared.", 11) == 0 && strcmp(n + 11, name) == 0)
                        shared_bytes = sh.size > reserved ? (size_t)(sh.size - reserved) : 0;
                }
                if (gm_sim_name_taken(p->img, name, strlen(name)))
                    continue;
                syms[p->img->nfuncs] = k;
                rc = gm_sim_add_func(p, name, strlen(name), shared_bytes, 0, 0);
            } else if (type == STT_OBJECT && (strncmp(sname, ".nv.constant", 12) == 0 ||
                                              strncmp(sname, ".nv.global", 10) == 0)) {
                if (sym_size > (UINT64_C(1) << 40)) {
                    rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: symbol '%s' is too large", name);
                    break;
                }
                if (gm_sim_name_taken(p->img, name, strlen(name)) || sym_size == 0)
                    continue;
                unsigned char *init = NULL;
                if (home.type != SHT_NOBITS && value <= home.size && sym_size <= home.size - value) {
                    if ((init = malloc((size_t)sym_size)) == NULL) {
                        rc = GM_CUDA_ERROR_OUT_OF_MEMORY;
                        break;
                    }
                    memcpy(init, b + home.offset + value, (size_t)sym_size);
                }
                rc = gm_sim_add_var(p, name, strlen(name), (size_t)sym_size, sname[4] == 'c', init);
            }
        }
    }
    if (rc == GM_CUDA_SUCCESS && !symtab)
        rc = gm_sim_fail(p, GM_CUDA_ERROR_INVALID_IMAGE, "cubin: no symbol table");
    /* registers and frame sizes: .nv.info */
    for (unsigned j = 1; rc == GM_CUDA_SUCCESS && j < shnum; j++) {
        shdr sh = section(b, shoff, j);
        const char *n = elf_string(b, size, &shstr, sh.name);
        if (n != NULL && strcmp(n, ".nv.info") == 0 && sh.type != SHT_NOBITS)
            read_nv_info(p->img, syms, b, &sh);
    }
    free(syms);
    return rc;
}

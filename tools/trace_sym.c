/*
 * trace_sym.c - names of call-site frames (trace_read.h's tr_frame_name):
 * the function of the module's ELF symbol table (.symtab, else .dynsym)
 * that holds the frame's address, read once per module file.
 */
#include "config.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_read.h"

typedef struct sym {
    uint64_t lo, hi;
    const char *name;
} sym;

typedef struct symtab {
    struct symtab *next;
    char *path;
    unsigned char *data; /* the file: names point into it */
    sym *s;
    size_t n;
} symtab;

static symtab *tables;

static int by_lo(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The functions of an ELF64 little-endian file's symbol table. */
static void read_symbols(symtab *tab)
{
    /* a trace names its modules: read only regular files, and not huge ones */
    struct stat sb;
    if (stat(tab->path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > ((off_t)1 << 30))
        return;
    FILE *f = fopen(tab->path, "rb");
    if (f == NULL)
        return;
    size_t cap = 1 << 20, n = 0;
    unsigned char *d = malloc(cap);
    while (d != NULL) {
        n += fread(d + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *b = cap < ((size_t)1 << 31) ? realloc(d, cap * 2) : NULL;
        if (b == NULL) {
            free(d);
            d = NULL;
            break;
        }
        d = b;
        cap *= 2;
    }
    fclose(f);
    if (d == NULL)
        return;
    tab->data = d;
    Elf64_Ehdr eh;
    if (n < sizeof eh)
        return;
    memcpy(&eh, d, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > n ||
        (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > n - eh.e_shoff)
        return;
    for (int pass = 0; pass < 2 && tab->n == 0; pass++) {
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            Elf64_Shdr sh, st;
            memcpy(&sh, d + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
            if (sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || sh.sh_link >= eh.e_shnum ||
                sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_offset > n || sh.sh_size > n - sh.sh_offset)
                continue;
            memcpy(&st, d + eh.e_shoff + (size_t)sh.sh_link * sizeof st, sizeof st);
            if (st.sh_offset > n || st.sh_size > n - st.sh_offset || st.sh_size == 0 ||
                d[st.sh_offset + st.sh_size - 1] != '\0')
                continue;
            size_t count = sh.sh_size / sizeof(Elf64_Sym);
            sym *s = realloc(tab->s, (tab->n + count) * sizeof *s);
            if (s == NULL)
                return;
            tab->s = s;
            for (size_t k = 0; k < count; k++) {
                Elf64_Sym es;
                memcpy(&es, d + sh.sh_offset + k * sizeof es, sizeof es);
                if (ELF64_ST_TYPE(es.st_info) != STT_FUNC || es.st_shndx == SHN_UNDEF || es.st_value == 0 ||
                    es.st_name >= st.sh_size)
                    continue;
                s[tab->n++] = (sym){es.st_value, es.st_value + (es.st_size ? es.st_size : 1),
                                    (const char *)d + st.sh_offset + es.st_name};
            }
        }
    }
    if (tab->n > 1)
        qsort(tab->s, tab->n, sizeof *tab->s, by_lo);
}

static symtab *table(const char *path)
{
    for (symtab *t = tables; t != NULL; t = t->next)
        if (strcmp(t->path, path) == 0)
            return t;
    symtab *t = calloc(1, sizeof *t);
    if (t == NULL || (t->path = strdup(path)) == NULL) {
        free(t);
        return NULL;
    }
    read_symbols(t);
    t->next = tables;
    tables = t;
    return t;
}

void tr_symbols_free(void)
{
    while (tables != NULL) {
        symtab *t = tables;
        tables = t->next;
        free(t->path);
        free(t->data);
        free(t->s);
        free(t);
    }
}

const char *tr_frame_name(const tr_trace *t, const tr_frame *f, char *buf, size_t size)
{
    const char *mod = tr_str(t, f->module);
    if (mod[0] == '\0') {
        snprintf(buf, size, "0x%llx", (unsigned long long)f->addr);
        return buf;
    }
    const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
    symtab *tab = table(mod);
    uint64_t pc = f->vaddr != 0 ? f->vaddr - 1 : 0; /* a return address: the call is just before it */
    if (tab != NULL && tab->n != 0) {
        size_t lo = 0, hi = tab->n;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (tab->s[mid].lo <= pc)
                lo = mid;
            else
                hi = mid;
        }
        /* the innermost function holding pc: the last that starts at or before it and ends after it */
        for (size_t i = lo + 1; i-- > 0;)
            if (tab->s[i].lo <= pc && pc < tab->s[i].hi) {
                snprintf(buf, size, "%s+0x%llx (%s)", tab->s[i].name,
                         (unsigned long long)(f->vaddr - tab->s[i].lo), base);
                return buf;
            } else if (lo - i > 64) {
                break;
            }
    }
    snprintf(buf, size, "%s+0x%llx", base, (unsigned long long)f->vaddr);
    return buf;
}

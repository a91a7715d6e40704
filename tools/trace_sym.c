/*
 * trace_sym.c - names of call-site frames (trace_read.h's tr_frame_name):
 * the function of the module's ELF symbol table (.symtab, else .dynsym)
 * that holds the frame's address.  A trace is untrusted input, and the
 * files it names are read with care: only what can be an ELF object (a
 * regular file, not empty, at most TR_SYMBOLS_MAX_FILE bytes, on no
 * pseudo file system such as /proc, beginning with the ELF magic), opened
 * without blocking and checked again once open, each (device, inode) once
 * however many names it has, and at most TR_SYMBOLS_MAX_TOTAL bytes in
 * all; anything else names no function.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "trace_read.h"

typedef struct sym {
    uint64_t lo, hi;
    const char *name;
} sym;

/* A module file, read once: by (device, inode), whatever its names. */
typedef struct module {
    struct module *next;
    dev_t dev;
    ino_t ino;
    unsigned char *data; /* the file: names point into it */
    sym *s;
    size_t n;
} module;

/* A name a trace gives a module (NULL mod: refused or unreadable). */
typedef struct symtab {
    struct symtab *next;
    char *path;
    module *mod;
} symtab;

static symtab *tables;
static module *modules;
static tr_symbols_stats stats;

static int by_lo(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The functions of an ELF64 little-endian file's symbol table. */
static void read_symbols(module *tab, const unsigned char *d, size_t n)
{
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

/* Reads all of fd (size bytes) into a new buffer; NULL on failure. */
static unsigned char *read_all(int fd, size_t size)
{
    unsigned char *d = malloc(size);
    size_t n = 0;
    while (d != NULL && n < size) {
        ssize_t r = pread(fd, d + n, size - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(d);
            return NULL;
        }
        n += (size_t)r;
    }
    return d;
}

/* The module that path names, read when it can be an ELF object (a
 * regular file of 1 byte to TR_SYMBOLS_MAX_FILE, on no pseudo file
 * system, beginning with the ELF magic, within the total), once per
 * (device, inode).  NULL: refused or unreadable. */
static module *module_of(const char *path)
{
    struct stat sb;
    struct statfs fs;
    /* stat first: a FIFO, a device or a /proc file is never opened */
    if (stat(path, &sb) != 0)
        return NULL;
    if (!S_ISREG(sb.st_mode) || sb.st_size <= 0 || (uint64_t)sb.st_size > TR_SYMBOLS_MAX_FILE ||
        statfs(path, &fs) != 0 || fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC ||
        fs.f_type == DEBUGFS_MAGIC) {
        return NULL;
    }
    for (module *m = modules; m != NULL; m = m->next)
        if (m->dev == sb.st_dev && m->ino == sb.st_ino)
            return m;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    /* what was opened, which may differ from what stat saw */
    struct stat fb;
    unsigned char magic[SELFMAG];
    module *m = NULL;
    if (fstat(fd, &fb) != 0 || !S_ISREG(fb.st_mode) || fb.st_dev != sb.st_dev || fb.st_ino != sb.st_ino ||
        fb.st_size <= 0 || (uint64_t)fb.st_size > TR_SYMBOLS_MAX_FILE ||
        pread(fd, magic, sizeof magic, 0) != (ssize_t)sizeof magic || memcmp(magic, ELFMAG, SELFMAG) != 0 ||
        stats.bytes_read + (uint64_t)fb.st_size > TR_SYMBOLS_MAX_TOTAL) {
        close(fd);
        return NULL;
    }
    if ((m = calloc(1, sizeof *m)) == NULL || (m->data = read_all(fd, (size_t)fb.st_size)) == NULL) {
        free(m);
        close(fd);
        return NULL;
    }
    close(fd);
    m->dev = fb.st_dev;
    m->ino = fb.st_ino;
    stats.files_read++;
    stats.bytes_read += (uint64_t)fb.st_size;
    read_symbols(m, m->data, (size_t)fb.st_size);
    m->next = modules;
    modules = m;
    return m;
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
    stats.names++;
    t->mod = module_of(path);
    stats.refused += t->mod == NULL;
    t->next = tables;
    tables = t;
    return t;
}

void tr_symbols_get_stats(tr_symbols_stats *s)
{
    *s = stats;
}

void tr_symbols_free(void)
{
    while (tables != NULL) {
        symtab *t = tables;
        tables = t->next;
        free(t->path);
        free(t);
    }
    while (modules != NULL) {
        module *m = modules;
        modules = m->next;
        free(m->data);
        free(m->s);
        free(m);
    }
    memset(&stats, 0, sizeof stats);
}

const char *tr_frame_name(const tr_trace *t, const tr_frame *f, char *buf, size_t size)
{
    const char *mod = tr_str(t, f->module);
    if (mod[0] == '\0') {
        snprintf(buf, size, "0x%llx", (unsigned long long)f->addr);
        return buf;
    }
    const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
    symtab *st = table(mod);
    module *tab = st != NULL ? st->mod : NULL;
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

/*
 * leaksite.c - GPUMEM_DEBUG=leaks' call sites, named when the list is
 * printed (leaksite.h): file:line through libdw where the program has debug
 * information, else object(symbol+offset) [address] through dladdr().
 */
#include "config.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#ifdef GM_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif

#include "leaksite.h"

#ifdef GM_HAVE_LIBDW
/* Separate debug files only from the local build-id tree (/usr/lib/debug):
 * dwfl_standard_find_debuginfo would ask debuginfod servers at exit. */
static int find_local_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                                char **debuginfo_file_name)
{
    return dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                        debuginfo_file_name);
}

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_local_debuginfo,
};
#endif

gm_leaksite *gm_leaksite_open(void)
{
#ifdef GM_HAVE_LIBDW
    Dwfl *d = dwfl_begin(&callbacks);
    if (d == NULL)
        return NULL;
    dwfl_report_begin(d);
    int bad = dwfl_linux_proc_report(d, getpid());
    if (dwfl_report_end(d, NULL, NULL) != 0 || bad != 0) {
        dwfl_end(d);
        return NULL;
    }
    return (gm_leaksite *)(void *)d;
#else
    return NULL;
#endif
}

void gm_leaksite_close(gm_leaksite *s)
{
#ifdef GM_HAVE_LIBDW
    if (s != NULL)
        dwfl_end((Dwfl *)(void *)s);
#else
    (void)s;
#endif
}

/* Writes a frame as backtrace_symbols() would: object(symbol+offset) [address]. */
static void print_address(FILE *out, void *f)
{
    Dl_info di;
    if (dladdr(f, &di) != 0 && di.dli_fname != NULL) {
        const char *obj = strrchr(di.dli_fname, '/');
        obj = obj != NULL ? obj + 1 : di.dli_fname;
        if (di.dli_sname != NULL && di.dli_saddr != NULL)
            fprintf(out, "%s(%s+0x%lx) [%p]", obj, di.dli_sname,
                    (unsigned long)((uintptr_t)f - (uintptr_t)di.dli_saddr), f);
        else
            fprintf(out, "%s(+0x%lx) [%p]", obj, (unsigned long)((uintptr_t)f - (uintptr_t)di.dli_fbase), f);
    } else {
        fprintf(out, "[%p]", f);
    }
}

/* Writes "function (file:line)" for return address f when its object has
 * debug information; false, writing nothing, otherwise. */
static bool print_source(gm_leaksite *s, FILE *out, void *f)
{
#ifdef GM_HAVE_LIBDW
    if (s == NULL)
        return false;
    Dwfl *d = (Dwfl *)(void *)s;
    Dwarf_Addr pc = (Dwarf_Addr)(uintptr_t)f - 1; /* a return address: the call is just before it */
    Dwfl_Module *mod = dwfl_addrmodule(d, pc);
    Dwfl_Line *line = mod != NULL ? dwfl_module_getsrc(mod, pc) : NULL;
    int lineno = 0;
    const char *src = line != NULL ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (src == NULL || lineno <= 0)
        return false;
    const char *dir = dwfl_line_comp_dir(line);
    size_t n = dir != NULL ? strlen(dir) : 0;
    if (n > 0 && strncmp(src, dir, n) == 0 && src[n] == '/')
        src += n + 1; /* relative to where it was compiled */
    GElf_Off off = 0;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
    if (name != NULL)
        fprintf(out, "%s (%s:%d)", name, src, lineno);
    else {
        print_address(out, f);
        fprintf(out, " (%s:%d)", src, lineno);
    }
    return true;
#else
    (void)s, (void)out, (void)f;
    return false;
#endif
}

/* Whether frame f is in the object at base own. */
static bool frame_in(void *f, const void *own)
{
    Dl_info di;
    return dladdr(f, &di) != 0 && di.dli_fbase == own;
}

void gm_leaksite_print(gm_leaksite *s, FILE *out, void *const *frames, int nframes)
{
    /* The first frames after this library's own (a sanitizer's interceptor
     * of backtrace() may come before them). */
    Dl_info self;
    void *own = dladdr((void *)(uintptr_t)gm_leaksite_print, &self) != 0 ? self.dli_fbase : NULL;
    int i = 0;
    while (i < nframes && !frame_in(frames[i], own))
        i++;
    while (i < nframes && frame_in(frames[i], own))
        i++;
    int first = i;
    if (first >= nframes) /* a static link: the frames as they are */
        first = nframes > 1 ? 1 : nframes;
    if (first >= nframes) {
        fputs(" (no call site recorded)", out);
        return;
    }
    fputs(", at ", out);
    for (int k = first, n = 0; k < nframes && n < 3; k++, n++) {
        if (n > 0)
            fputs(" < ", out);
        if (!print_source(s, out, frames[k]))
            print_address(out, frames[k]);
    }
}

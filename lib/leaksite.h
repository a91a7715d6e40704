/*
 * leaksite.h - the call sites of GPUMEM_DEBUG=leaks as a person reads them
 * (memstats.c records the return addresses; this names them when the list
 * is printed, never when an allocation is recorded).
 *
 * With libdw (configure finds it through pkg-config libdw), a frame whose
 * object has debug information reads "function (file:line)", the file as
 * the debug information names it, relative to the directory it was
 * compiled in; the symbol table names the function, so no -rdynamic is
 * needed.  Any other frame, and every frame without libdw, reads as
 * backtrace_symbols() writes it: object(symbol+offset) [address].  Only the
 * objects mapped into this process and the separate debug files of
 * /usr/lib/debug are read: nothing is fetched (no debuginfod).
 */
#ifndef GM_LEAKSITE_H
#define GM_LEAKSITE_H

#include <stdio.h>

/* What reads the process's debug information for one listing; NULL when
 * there is none (no libdw, or it could not read the process's objects). */
typedef struct gm_leaksite gm_leaksite;

gm_leaksite *gm_leaksite_open(void);
void gm_leaksite_close(gm_leaksite *s);

/* Writes ", at F1 < F2 < F3" for the first three frames after this
 * library's own (all but the recorder's when the library is linked into
 * the program), or " (no call site recorded)".  s may be NULL. */
void gm_leaksite_print(gm_leaksite *s, FILE *out, void *const *frames, int nframes);

#endif /* GM_LEAKSITE_H */

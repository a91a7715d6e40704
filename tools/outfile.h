/*
 * outfile.h - how the gpumem tool writes an output file it is given (-o):
 * without destroying what the name stands for.
 *
 *   - A regular file (or a name that does not exist yet) is written whole
 *     beside it (NAME.tmpPID, in the same directory) and renamed onto it
 *     when complete: a failed or interrupted write leaves the old file as
 *     it was.  An existing file keeps its permission bits (and, where
 *     allowed, its owner and group); a new one gets 0666 less the umask.
 *   - A symbolic link is followed: what it names is written (by the same
 *     rule when that is a regular file), the link itself stays.
 *   - Anything else (a FIFO, a character device such as /dev/null, a
 *     socket), and a regular file with more than one hard link, is written
 *     through, in place, as a shell's '>' would: it is never replaced.
 *     Opening a FIFO waits for its reader.
 */
#ifndef GPUMEM_TOOLS_OUTFILE_H
#define GPUMEM_TOOLS_OUTFILE_H

#include <stdio.h>
#include <sys/types.h>

typedef struct outfile {
    FILE *f;      /* write here */
    char *target; /* the file written: path, or what its links name */
    char *tmp;    /* write-then-rename: the temporary file; NULL: written in place */
    mode_t mode;  /* the permission bits the file gets */
    uid_t uid;
    gid_t gid;
    int keep_owner;
} outfile;

/* Opens path for writing by the rules above.  0, or -1 with errno set (and
 * nothing made or changed). */
int outfile_open(outfile *o, const char *path);

/* Ends the writing.  ok: commit (flush; for write-then-rename, set the mode
 * and rename onto the target); 0, or -1 with errno set when a write, the
 * flush or the rename failed (the temporary file is removed, the target is
 * as it was).  !ok: discard (the temporary file is removed; a file written
 * in place keeps what was written); returns 0. */
int outfile_close(outfile *o, int ok);

#endif /* GPUMEM_TOOLS_OUTFILE_H */

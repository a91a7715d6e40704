/*
 * outfile.c - the gpumem tool's output files (outfile.h): write-then-rename
 * for regular files only, write-through for anything else.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

static void clear(outfile *o)
{
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
}

/* Writes through to path, in place (truncating a regular file). */
static int open_in_place(outfile *o, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0)
        return -1;
    if ((o->f = fdopen(fd, "w")) == NULL) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return 0;
}

int outfile_open(outfile *o, const char *path)
{
    memset(o, 0, sizeof *o);
    struct stat sb;
    int exists = lstat(path, &sb) == 0;
    if (!exists && errno != ENOENT)
        return -1;
    if (exists && S_ISLNK(sb.st_mode)) {
        /* the link stays: what it names is the target */
        struct stat tb;
        char *real = NULL;
        if (stat(path, &tb) != 0 || !S_ISREG(tb.st_mode) || tb.st_nlink != 1 ||
            (real = realpath(path, NULL)) == NULL) {
            free(real);
            if ((o->target = strdup(path)) == NULL || open_in_place(o, path) != 0) {
                int e = errno;
                clear(o);
                errno = e;
                return -1;
            }
            return 0;
        }
        o->target = real;
        sb = tb;
    } else if (exists && (!S_ISREG(sb.st_mode) || sb.st_nlink != 1)) {
        if ((o->target = strdup(path)) == NULL || open_in_place(o, path) != 0) {
            int e = errno;
            clear(o);
            errno = e;
            return -1;
        }
        return 0;
    } else if ((o->target = strdup(path)) == NULL) {
        return -1;
    }
    /* a regular file, or a new one: beside it, then renamed */
    if (exists) {
        o->mode = sb.st_mode & 07777;
        o->uid = sb.st_uid;
        o->gid = sb.st_gid;
        o->keep_owner = 1;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        o->mode = 0666 & ~mask;
    }
    size_t n = strlen(o->target) + 32;
    if ((o->tmp = malloc(n)) == NULL) {
        clear(o);
        errno = ENOMEM;
        return -1;
    }
    snprintf(o->tmp, n, "%s.tmp%ld", o->target, (long)getpid());
    int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        int e = errno;
        clear(o);
        errno = e;
        return -1;
    }
    if ((o->f = fdopen(fd, "w")) == NULL) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        clear(o);
        errno = e;
        return -1;
    }
    return 0;
}

int outfile_close(outfile *o, int ok)
{
    int rc = 0, e = 0;
    if (ok) {
        errno = 0;
        if (fflush(o->f) != 0 || ferror(o->f)) {
            e = errno != 0 ? errno : EIO;
            rc = -1;
        } else if (o->tmp != NULL) {
            int fd = fileno(o->f);
            if (o->keep_owner && fchown(fd, o->uid, o->gid) != 0) {
                /* not permitted: the file becomes the writer's */
            }
            if (fchmod(fd, o->mode) != 0) {
                e = errno;
                rc = -1;
            }
        }
    }
    errno = 0;
    if (fclose(o->f) != 0 && rc == 0 && ok) {
        e = errno != 0 ? errno : EIO;
        rc = -1;
    }
    if (o->tmp != NULL) {
        if (ok && rc == 0 && rename(o->tmp, o->target) != 0) {
            e = errno;
            rc = -1;
        }
        if (!ok || rc != 0)
            unlink(o->tmp);
    }
    clear(o);
    errno = e;
    return rc;
}

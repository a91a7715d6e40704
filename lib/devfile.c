/*
 * devfile.c - the configured default device: CUDA_DEVICE and ~/.cuda-device.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devfile.h"
#include "env.h"
#include "error.h"

/* Writes s[0, n) into out as text a message can show: printable ASCII as is,
 * other bytes as \xNN, cut with "..." after 64 bytes. */
static void show(const char *s, size_t n, char *out, size_t size)
{
    size_t used = 0;
    for (size_t i = 0; i < n && used + 8 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (i == 64) {
            used += (size_t)snprintf(out + used, size - used, "...");
            break;
        }
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[used++] = (char)ch;
        else
            used += (size_t)snprintf(out + used, size - used, "\\x%02x", ch);
    }
    out[used] = '\0';
}

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* s[0, n) as an ordinal; source names it in messages. */
static gpumem_status parse_ordinal(const char *s, size_t n, const char *source, int *device)
{
    size_t i = 0, end = n;
    while (i < end && blank(s[i]))
        i++;
    while (end > i && blank(s[end - 1]))
        end--;
    bool negative = i < end && s[i] == '-';
    size_t d = negative ? i + 1 : i;
    bool digits = d < end;
    for (size_t j = d; j < end; j++)
        digits = digits && s[j] >= '0' && s[j] <= '9';
    if (!digits)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s is not a decimal device ordinal", source);
    if (s[d] == '0' && end - d > 1)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s is not a decimal device ordinal (leading zeros "
                        "are not allowed)", source);
    if (negative)
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s is %s; device ordinals start at 0", source,
                        s[d] == '0' ? "not a decimal device ordinal (-0)" : "negative");
    long long v = 0;
    for (size_t j = d; j < end; j++) {
        v = v * 10 + (s[j] - '0');
        if (v > INT_MAX)
            return gm_error(GPUMEM_ERROR_INVALID_DEVICE, "%s: no such device", source);
    }
    *device = (int)v;
    return GPUMEM_OK;
}

gpumem_status gm_parse_cuda_device(const char *text, int *device)
{
    char shown[400], source[440];
    show(text, strlen(text), shown, sizeof shown);
    snprintf(source, sizeof source, "CUDA_DEVICE='%s'", shown);
    return parse_ordinal(text, strlen(text), source, device);
}

gpumem_status gm_parse_device_file(const char *path, const char *data, size_t size, bool more, int *device)
{
    const char *nl = memchr(data, '\n', size);
    size_t len = nl != NULL ? (size_t)(nl - data) : size;
    if (len > GM_DEVICE_FILE_LINE_MAX || (nl == NULL && more))
        return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s: the first line is longer than %d bytes", path,
                        GM_DEVICE_FILE_LINE_MAX);
    char shown[400], source[GM_DEVICE_FILE_PATH_MAX + 440];
    show(data, len, shown, sizeof shown);
    snprintf(source, sizeof source, "%s (first line '%s')", path, shown);
    return parse_ordinal(data, len, source, device);
}

static const char *home_dir(void)
{
    const char *home = gm_env("HOME");
    if (home != NULL)
        return home;
    struct passwd *pw = getpwuid(getuid());
    return pw != NULL ? pw->pw_dir : NULL;
}

/* Reads up to size bytes of path (a regular file) into buf: 1 read (*got
 * bytes, *more whether the file goes on), 0 no such file, else an error. */
static int read_head(const char *path, char *buf, size_t size, size_t *got, bool *more, gpumem_status *st)
{
    /* O_NONBLOCK: a FIFO with no writer must not block the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        *st = gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    int bad = fstat(fd, &sb) != 0 ? errno : 0;
    if (bad != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        *st = gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "cannot read %s: %s", path,
                       bad != 0 ? strerror(bad) : "not a regular file");
        return -1;
    }
    *got = 0;
    *more = false;
    for (;;) {
        ssize_t n = read(fd, buf + *got, size - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            *st = gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "cannot read %s: %s", path, strerror(e));
            return -1;
        }
        if (n == 0)
            break;
        *got += (size_t)n;
        if (memchr(buf, '\n', *got) != NULL)
            break;
        if (*got == size) {
            char extra;
            ssize_t m;
            while ((m = read(fd, &extra, 1)) < 0 && errno == EINTR)
                ;
            *more = m > 0;
            break;
        }
    }
    close(fd);
    return 1;
}

gpumem_status gm_configured_device(const char *what, gm_configured *c)
{
    memset(c, 0, sizeof *c);
    gpumem_status st = GPUMEM_OK;
    const char *env = gm_env("CUDA_DEVICE");
    if (env != NULL) {
        char shown[400];
        show(env, strlen(env), shown, sizeof shown);
        snprintf(c->source, sizeof c->source, "CUDA_DEVICE='%s'", shown);
        c->rule = GPUMEM_SELECTION_CUDA_DEVICE;
        st = gm_parse_cuda_device(env, &c->device);
    } else {
        const char *home = home_dir();
        if (home == NULL)
            return GPUMEM_OK;
        static const char *const names[] = {".cuda-device", ".cuda_device"};
        char path[GM_DEVICE_FILE_PATH_MAX];
        char buf[GM_DEVICE_FILE_LINE_MAX + 1];
        size_t got = 0;
        bool more = false;
        int found = 0;
        for (size_t i = 0; i < 2 && found == 0; i++) {
            int n = snprintf(path, sizeof path, "%s/%s", home, names[i]);
            if (n < 0 || (size_t)n >= sizeof path)
                return gm_error(GPUMEM_ERROR_INVALID_ENVIRONMENT, "%s: the home directory (HOME) is too long: "
                                "%s/%s would be longer than %d bytes", what, "$HOME", names[i],
                                GM_DEVICE_FILE_PATH_MAX - 1);
            found = read_head(path, buf, sizeof buf, &got, &more, &st);
        }
        if (found == 0)
            return GPUMEM_OK;
        if (found < 0)
            return gm_error_prefix(st, what);
        c->rule = GPUMEM_SELECTION_DEVICE_FILE;
        const char *nl = memchr(buf, '\n', got);
        char shown[400];
        show(buf, nl != NULL ? (size_t)(nl - buf) : got, shown, sizeof shown);
        snprintf(c->source, sizeof c->source, "%s (first line '%s')", path, shown);
        st = gm_parse_device_file(path, buf, got, more, &c->device);
    }
    if (st != GPUMEM_OK)
        return gm_error_prefix(st, what);
    c->found = true;
    return GPUMEM_OK;
}

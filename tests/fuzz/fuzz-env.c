/* The environment parsers (lib/env.c, lib/devfile.c, GPUMEM_SIM_FAIL),
 * each against an independent reading of the grammar that env.c and
 * doc/environment.md state. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>

#include "devfile.h"
#include "driver.h"
#include "env.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return 0;
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

/* s[0, n) trimmed of blanks into [*b, *e). */
static void trim(const char *s, size_t n, size_t *b, size_t *e)
{
    *b = 0, *e = n;
    while (*b < *e && blank(s[*b]))
        (*b)++;
    while (*e > *b && blank(s[*e - 1]))
        (*e)--;
}

/* The reference integer: canonical digits with an optional '-', value in
 * [LONG_MIN, LONG_MAX] (computed in __int128). */
static int ref_long(const char *s, size_t n, long *out)
{
    size_t b, e;
    trim(s, n, &b, &e);
    int neg = b < e && s[b] == '-';
    size_t d = b + (size_t)neg;
    if (d >= e || (s[d] == '0' && (e - d > 1 || neg)))
        return 0;
    __int128 v = 0;
    for (size_t i = d; i < e; i++) {
        if (!digit(s[i]))
            return 0;
        v = v * 10 + (s[i] - '0');
        if (v > (__int128)LONG_MAX + 1)
            return 0;
    }
    if (neg)
        v = -v;
    if (v > LONG_MAX || v < LONG_MIN)
        return 0;
    *out = (long)v;
    return 1;
}

static int ref_double_grammar(const char *s, size_t n)
{
    size_t b, e;
    trim(s, n, &b, &e);
    size_t i = b;
    if (i < e && s[i] == '-')
        i++;
    size_t before = 0, after = 0;
    while (i < e && digit(s[i]))
        i++, before++;
    if (i < e && s[i] == '.') {
        i++;
        while (i < e && digit(s[i]))
            i++, after++;
    }
    if (before + after == 0)
        return 0;
    if (i < e && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < e && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < e && digit(s[i]))
            i++, ed++;
        if (ed == 0)
            return 0;
    }
    return i == e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_reader r = {data, size};
    unsigned which = fuzz_u8(&r) % 6;
    const char *raw = (const char *)r.p;
    size_t n = r.n;
    char *s = fuzz_rest_string(&r);
    size_t len = strlen(s); /* the environment's view: up to the first NUL */
    long v = 0x5a5a, want = 0;
    switch (which) {
    case 0: {
        int got = gm_parse_long(s, &v);
        int ref = ref_long(s, len, &want);
        FUZZ_CHECK(got == ref, "gm_parse_long('%s') %d, the grammar says %d", s, got, ref);
        FUZZ_CHECK(got ? v == want : v == 0x5a5a, "gm_parse_long('%s') = %ld, want %ld", s, v, want);
        break;
    }
    case 1: {
        int dev = -7;
        gpumem_status st = gm_parse_cuda_device(s, &dev);
        int ref = ref_long(s, len, &want);
        if (ref && want >= 0 && want <= INT_MAX)
            FUZZ_CHECK(st == GPUMEM_OK && dev == want, "CUDA_DEVICE='%s': status %d, device %d", s, st, dev);
        else if (ref && want > INT_MAX)
            FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_DEVICE && dev == -7, "CUDA_DEVICE='%s': status %d", s, st);
        else if (st == GPUMEM_ERROR_INVALID_DEVICE) /* all digits, too many for a long */
            FUZZ_CHECK(dev == -7 && !ref, "CUDA_DEVICE='%s'", s);
        else
            FUZZ_CHECK(st == GPUMEM_ERROR_INVALID_ENVIRONMENT && dev == -7, "CUDA_DEVICE='%s': status %d", s, st);
        FUZZ_CHECK(st == GPUMEM_OK || strstr(gpumem_last_error(), "CUDA_DEVICE='") != NULL, "message: %s",
                   gpumem_last_error());
        break;
    }
    case 2: {
        /* the file's bytes, NULs and all; `more` is the last byte's low bit */
        int dev = -7;
        int more = n > 0 && (raw[n - 1] & 1);
        size_t m = n > 0 ? n - 1 : 0;
        gpumem_status st = gm_parse_device_file("/h/.cuda-device", raw, m, more, &dev);
        const char *nl = memchr(raw, '\n', m);
        size_t line = nl != NULL ? (size_t)(nl - raw) : m;
        int too_long = line > GM_DEVICE_FILE_LINE_MAX || (nl == NULL && more);
        int ref = !too_long && memchr(raw, '\0', line) == NULL && ref_long(raw, line, &want);
        if (ref && want >= 0 && want <= INT_MAX)
            FUZZ_CHECK(st == GPUMEM_OK && dev == want, "device file: status %d, device %d", st, dev);
        else
            FUZZ_CHECK(st != GPUMEM_OK && dev == -7, "device file: status %d", st);
        if (too_long)
            FUZZ_CHECK(strstr(gpumem_last_error(), "longer than 64 bytes") != NULL, "%s", gpumem_last_error());
        break;
    }
    case 3: {
        uint64_t sz = 0x5a5a;
        int got = gm_parse_size(s, &sz);
        /* reference: trim, canonical digits, suffix */
        size_t b, e;
        trim(s, len, &b, &e);
        size_t d = b;
        unsigned __int128 val = 0;
        while (d < e && digit(s[d]))
            val = val * 10 + (unsigned)(s[d++] - '0');
        int ok = d > b && !(s[b] == '0' && d - b > 1) && d - b <= 20 && val <= UINT64_MAX;
        unsigned shift = 0;
        const char *suf = s + d;
        size_t sl = e - d;
        static const char *const units = "KMGT";
        if (ok && sl > 0) {
            char up = (char)(suf[0] >= 'a' && suf[0] <= 'z' ? suf[0] - 32 : suf[0]);
            const char *u = up != '\0' ? strchr(units, up) : NULL;
            if (u != NULL) {
                shift = 10 * (unsigned)(u - units + 1);
                if (sl == 1 || (sl == 2 && (suf[1] | 0x20) == 'b') ||
                    (sl == 3 && (suf[1] | 0x20) == 'i' && (suf[2] | 0x20) == 'b'))
                    ;
                else
                    ok = 0;
            } else {
                ok = sl == 1 && (suf[0] | 0x20) == 'b';
            }
        }
        if (ok && shift != 0 && val > (UINT64_MAX >> shift))
            ok = 0;
        FUZZ_CHECK(got == ok, "gm_parse_size('%s') %d, the grammar says %d", s, got, ok);
        if (ok)
            FUZZ_CHECK(sz == (uint64_t)val << shift, "gm_parse_size('%s')", s);
        else
            FUZZ_CHECK(sz == 0x5a5a, "output changed");
        break;
    }
    case 4: {
        double x = 1234.5;
        int got = gm_parse_double(s, &x);
        int gram = ref_double_grammar(s, len);
        if (!gram)
            FUZZ_CHECK(!got && x == 1234.5, "gm_parse_double('%s') accepted text outside the grammar", s);
        else {
            errno = 0;
            double ref = strtod(s, NULL);
            if (isinf(ref))
                FUZZ_CHECK(!got, "gm_parse_double('%s'): an overflow is refused", s);
            else
                FUZZ_CHECK(got && x == ref + 0.0 && !signbit(x == 0 ? x : 1.0), "gm_parse_double('%s') = %g, want %g",
                           s, x, ref);
        }
        break;
    }
    default: {
        long k = -1;
        int code = -1;
        const char *bad = NULL;
        int got = gm_parse_sim_fail(s, &k, &code, &bad);
        const char *colon = strchr(s, ':');
        size_t kl = colon ? (size_t)(colon - s) : len;
        int ref = ref_long(s, kl, &want) && want >= 1;
        if (!ref)
            FUZZ_CHECK(!got && bad == NULL, "GPUMEM_SIM_FAIL='%s': a bad k is refused for its k", s);
        else if (got)
            FUZZ_CHECK(k == want && code > 0, "GPUMEM_SIM_FAIL='%s': k %ld, code %d", s, k, code);
        else
            FUZZ_CHECK(colon != NULL && bad == colon + 1, "GPUMEM_SIM_FAIL='%s': refused for its ERROR", s);
        break;
    }
    }
    free(s);
    return 0;
}

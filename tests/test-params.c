/* The table of GPUMEM_* variables (lib/params.c) against doc/environment.md:
 * every variable of the table has its row in the page, with the same
 * default, and every GPUMEM_* row of the page is in the table; and no file
 * of lib/ but params.c and env.c names a GPUMEM_* variable to read it (a
 * read that bypasses the table).  Then the table's reads: once-read
 * variables keep their first value or error, the others are read each
 * time. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpumem.h>

#include "params.h"
#include "tap.h"

/* The file's bytes, NUL-terminated (NULL when it cannot be read). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    size_t got;
    while (s != NULL && (got = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *t = realloc(s, cap *= 2);
            if (t == NULL) {
                free(s);
                s = NULL;
            }
            s = t;
        }
    }
    fclose(f);
    if (s != NULL)
        s[n] = '\0';
    return s;
}

/* The page's row of variable name: "| `NAME` | values | default |", its
 * default cell (backquotes dropped) into cell; false when there is none. */
static bool doc_row(const char *doc, const char *name, char *cell, size_t size)
{
    char key[96];
    snprintf(key, sizeof key, "\n| `%s` |", name);
    const char *p = strstr(doc, key);
    if (p == NULL)
        return false;
    const char *end = strchr(p + 1, '\n');
    const char *bar = end;
    while (bar > p && *--bar != '|') /* the row's last bar */
        ;
    const char *start = bar;
    while (start > p && *--start != '|')
        ;
    size_t n = 0;
    for (const char *q = start + 1; q < bar && n + 1 < size; q++)
        if (*q != '`')
            cell[n++] = *q;
    cell[n] = '\0';
    return true;
}

int main(void)
{
    const char *src = getenv("GPUMEM_TEST_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/doc/environment.md", src != NULL ? src : ".");
    char *doc = slurp(path);
    plan(9);
    if (doc == NULL)
        diag("cannot read %s", path);
    if (doc == NULL)
        doc = calloc(1, 1); /* every check below fails */

    int documented = 1, defaults = 1, complete = 1;
    for (int i = 0; i < GM_P_COUNT; i++) {
        const gm_param_def *d = &gm_params[i];
        char cell[512];
        if (d->name == NULL || d->when == NULL || d->doc == NULL || d->dflt == NULL) {
            complete = 0;
            diag("row %d of the table is incomplete", i);
            continue;
        }
        if (!doc_row(doc, d->name, cell, sizeof cell)) {
            documented = 0;
            diag("%s is not in doc/environment.md", d->name);
        } else if (strstr(cell, d->dflt) == NULL) {
            defaults = 0;
            diag("%s: the table's default '%s', the page's '%s'", d->name, d->dflt, cell);
        }
    }
    ok(complete, "every row of the table has its name, default, when it is read and its line of documentation");
    ok(documented, "every variable of the table (%d) has its row in doc/environment.md", GM_P_COUNT);
    ok(defaults, "with the same default");

    int known = 1, rows = 0;
    for (const char *p = doc; (p = strstr(p, "\n| `GPUMEM_")) != NULL; p++) {
        char name[96];
        size_t n = strcspn(p + 4, "`");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p + 4);
        rows++;
        int found = 0;
        for (int i = 0; i < GM_P_COUNT; i++)
            found |= strcmp(gm_params[i].name, name) == 0;
        if (!found) {
            known = 0;
            diag("doc/environment.md has %s, the table does not", name);
        }
    }
    ok(known && rows == GM_P_COUNT, "every GPUMEM_* row of doc/environment.md (%d) is in the table", rows);

    /* no read around the table: a quoted "GPUMEM_X" of the table in lib/ is
     * params.c's, or a message's (after a %, a ':' or ' ' inside the quotes) */
    snprintf(path, sizeof path, "%s/lib", src != NULL ? src : ".");
    DIR *dir = opendir(path);
    int bypass = 0;
    struct dirent *e;
    while (dir != NULL && (e = readdir(dir)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0 || strcmp(e->d_name, "params.c") == 0)
            continue;
        char file[4600];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        char *s = slurp(file);
        for (int i = 0; s != NULL && i < GM_P_COUNT; i++) {
            char call[5][128];
            snprintf(call[0], sizeof call[0], "gm_env(\"%s\")", gm_params[i].name);
            snprintf(call[1], sizeof call[1], "gm_env_long(\"%s\"", gm_params[i].name);
            snprintf(call[2], sizeof call[2], "gm_env_size(\"%s\"", gm_params[i].name);
            snprintf(call[3], sizeof call[3], "gm_env_double(\"%s\"", gm_params[i].name);
            snprintf(call[4], sizeof call[4], "getenv(\"%s\")", gm_params[i].name);
            for (int k = 0; k < 5; k++)
                if (strstr(s, call[k]) != NULL) {
                    bypass++;
                    diag("lib/%s reads %s around the table: %s", e->d_name, gm_params[i].name, call[k]);
                }
        }
        free(s);
    }
    if (dir != NULL)
        closedir(dir);
    ok(dir != NULL && bypass == 0, "no file of lib/ reads a variable of the table around it");

    /* reads */
    long v = 0;
    uint64_t u = 0;
    double r = 0;
    setenv("GPUMEM_STAGING_DEPTH", "7", 1);
    gm_param_long(GM_P_STAGING_DEPTH, &v, NULL);
    setenv("GPUMEM_STAGING_DEPTH", "9", 1);
    ok(gm_param_long(GM_P_STAGING_DEPTH, &v, NULL) == GPUMEM_OK && v == 7,
       "a variable read once keeps its first value (7, not the later 9)");
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "2G", 1);
    int first = gm_param_size(GM_P_COPY_SCRATCH_CHUNK, &u) == GPUMEM_ERROR_INVALID_ENVIRONMENT;
    setenv("GPUMEM_COPY_SCRATCH_CHUNK", "1M", 1);
    ok(first && gm_param_size(GM_P_COPY_SCRATCH_CHUNK, &u) == GPUMEM_ERROR_INVALID_ENVIRONMENT &&
           strstr(gpumem_last_error(), "GPUMEM_COPY_SCRATCH_CHUNK='2G': must be between 64 KiB and 1 GiB") != NULL,
       "and its first error, message included (%s)", gpumem_last_error());
    setenv("GPUMEM_MAX_PENDING_DEALLOCS_RATIO", " 0.25 ", 1);
    int a = gm_param_double(GM_P_MAX_PENDING_DEALLOCS_RATIO, &r) == GPUMEM_OK && r == 0.25;
    setenv("GPUMEM_MAX_PENDING_DEALLOCS_RATIO", "0.5", 1);
    ok(a && gm_param_double(GM_P_MAX_PENDING_DEALLOCS_RATIO, &r) == GPUMEM_OK && r == 0.5,
       "a variable read at each use is read again (0.25, then 0.5)");
    unsetenv("GPUMEM_SIM_STREAM_DELAY_US");
    ok(gm_param_long(GM_P_SIM_STREAM_DELAY_US, &v, NULL) == GPUMEM_OK && v == 2000 &&
           gm_param_size(GM_P_SIM_DEVICES, &u) == GPUMEM_ERROR_INTERNAL,
       "unset gives the table's default; a read of the wrong type is an internal error");
    free(doc);
    done_testing();
    return exit_status();
}

/* Runs a fuzz target over files and directories of inputs (the committed
 * corpus) without libFuzzer: `tests/fuzz-x DIR...`, or with no argument
 * tests/fuzz/corpus/<name>/ under GPUMEM_TEST_SRCDIR.  Prints TAP: one line
 * per input, which passes when the target returns (an oracle failure
 * aborts). */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef FUZZ_NAME
#error "FUZZ_NAME must name the target's corpus directory"
#endif

static int count;

static int compare(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        printf("not ok %d - %s: cannot open\n", ++count, path);
        return;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf == NULL) {
        printf("not ok %d - %s: out of memory\n", ++count, path);
        return;
    }
    /* An exact-size copy, so that reading past the input is caught. */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    printf("ok %d - %s (%zu bytes)\n", ++count, path, n);
}

static void run_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        printf("not ok %d - %s: no such file or directory\n", ++count, path);
        return;
    }
    if (!S_ISDIR(sb.st_mode)) {
        run_file(path);
        return;
    }
    DIR *dir = opendir(path);
    if (dir == NULL) {
        printf("not ok %d - %s: cannot list\n", ++count, path);
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(dir);
    qsort(names, n, sizeof *names, compare);
    for (size_t i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        run_file(full);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            run_path(argv[i]);
    } else {
        const char *src = getenv("GPUMEM_TEST_SRCDIR");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", src && *src ? src : ".", FUZZ_NAME);
        run_path(dir);
    }
    printf("1..%d\n", count);
    return 0;
}

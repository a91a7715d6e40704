/*
 * devfile.h - the configured default device: CUDA_DEVICE, then
 * ~/.cuda-device (or ~/.cuda_device), as pycuda's make_default_context reads
 * them.  The parsers are pure functions (no environment, no files) so tests
 * and fuzzers can call them directly; gm_configured_device does the I/O.
 *
 * A device ordinal, in CUDA_DEVICE or on the file's first line, is
 *   [ \t]* ( 0 | [1-9][0-9]* ) [ \t]*
 * and at most INT_MAX: no sign, no leading zeros, no other byte (a NUL, a
 * carriage return, other white space or anything after the number is an
 * error).  "-N" is reported as negative; a number above INT_MAX as no such
 * device.  The file's first line ends at its first '\n' or at the end of the
 * file and may hold at most GM_DEVICE_FILE_LINE_MAX bytes.
 */
#ifndef GM_DEVFILE_H
#define GM_DEVFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "gpumem/context.h"

#define GM_DEVICE_FILE_LINE_MAX 64

/* The longest path of the device file; a longer $HOME is an error. */
#define GM_DEVICE_FILE_PATH_MAX 4096

/* Where a configured device number came from, for messages. */
typedef struct gm_configured {
    bool found;
    int device;
    gpumem_selection rule;
    char source[GM_DEVICE_FILE_PATH_MAX + 512]; /* "CUDA_DEVICE='3'", "/home/u/.cuda-device (first line '3')" */
} gm_configured;

/* CUDA_DEVICE's value text (NUL-terminated) as a device ordinal.
 * GPUMEM_OK; GPUMEM_ERROR_INVALID_ENVIRONMENT (not an ordinal, negative);
 * GPUMEM_ERROR_INVALID_DEVICE (above INT_MAX).  The message names
 * CUDA_DEVICE and its value. */
gpumem_status gm_parse_cuda_device(const char *text, int *device);

/* The device file's contents: data[0, size) are its first bytes, and `more`
 * tells whether the file goes on after them.  path names it in messages.
 * The same statuses as gm_parse_cuda_device, and GPUMEM_ERROR_INVALID_ENVIRONMENT
 * for a first line longer than GM_DEVICE_FILE_LINE_MAX bytes. */
gpumem_status gm_parse_device_file(const char *path, const char *data, size_t size, bool more, int *device);

/* Rules 1 and 2 of the default device: fills *c (c->found false when neither
 * CUDA_DEVICE nor a file is there).  Errors are prefixed with `what`. */
gpumem_status gm_configured_device(const char *what, gm_configured *c);

#endif /* GM_DEVFILE_H */

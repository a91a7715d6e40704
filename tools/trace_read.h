/*
 * trace_read.h - the reader of trace files (doc/trace-format.md) for
 * `gpumem trace`, and the names of what they hold.
 *
 * tr_parse checks every byte it uses: a file that is not a trace, of
 * another version, truncated or corrupt gives a status and a message that
 * says where it stops (byte offset, block, event record), and no trace.
 * With partial set, a truncated or corrupt file gives what comes before the
 * place it stops instead (the message says where), marked incomplete.
 */
#ifndef GPUMEM_TOOLS_TRACE_READ_H
#define GPUMEM_TOOLS_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* The largest allocation (and free) a trace may record, and the most that
 * all of its allocations may add up to: an alloc or free record of more
 * bytes, or an alloc that takes the sum past it, is corrupt.  So memory in
 * use, however it is summed, fits an int64_t (and a double converts back). */
#define TR_MAX_ALLOC_BYTES ((uint64_t)INT64_MAX)

typedef struct tr_event {
    uint8_t type, kind, kind2, flags; /* GM_TE_*, gpumem_memory_kind (0xff unknown), GM_TF_* */
    int32_t device;
    uint32_t thread;                  /* the thread's index (tr_trace.thr[].index) */
    uint32_t ref, aux;                /* as the format says (an alloc's aux, its owner: GM_TO_PROGRAM in version 1) */
    uint64_t t;                       /* ns since the trace started (a copy: its start) */
    uint64_t ctx, stream, pool, bytes;
    uint64_t value;                   /* address; a copy's duration in ns; bytes given back */
    uint64_t seq;                     /* the record's place in the file, from 0 */
} tr_event;

typedef struct tr_frame {
    uint64_t addr, vaddr; /* the return address, and the address in its module's file */
    uint32_t module;      /* string id of the module's file, 0 unknown */
} tr_frame;

typedef struct tr_stack {
    uint32_t n;
    tr_frame f[GM_TRACE_MAX_FRAMES];
} tr_stack;

typedef struct tr_thread {
    uint32_t index, tid;
    char name[17];
} tr_thread;

typedef struct tr_trace {
    uint32_t version, flags, pid;
    uint64_t realtime_ns;   /* the wall clock at the start */
    char *program;          /* the traced program's file ("" unknown) */
    tr_event *ev;           /* by time, then file order */
    size_t nev;
    char **str;             /* str[id] for 1 <= id < nstr; valid UTF-8 (bad bytes as '?') */
    size_t nstr;
    tr_stack *stk;          /* stk[id] for 1 <= id < nstk */
    size_t nstk;
    tr_thread *thr;
    size_t nthr;
    int complete;           /* the end block was read */
    uint64_t recorded, lost; /* from the end block */
    uint64_t end_ns;        /* when the trace ended (else its last event) */
} tr_trace;

typedef enum tr_status {
    TR_OK = 0,
    TR_NOT_TRACE,  /* no trace's magic number */
    TR_VERSION,    /* another format version */
    TR_TRUNCATED,  /* the file ends inside a block, or before the end block */
    TR_CORRUPT,    /* a value the format does not allow */
    TR_NO_MEMORY
} tr_status;

/* Reads the size bytes at data into *t (tr_free frees it).  name names
 * the file in msg, which gets the reason of any status but TR_OK (or, with
 * partial, where an incomplete file stops). */
tr_status tr_parse(const unsigned char *data, size_t size, int partial, const char *name, tr_trace *t, char *msg,
                   size_t msgsize);

/* tr_parse of a file's contents (TR_NOT_TRACE with the reason when it
 * cannot be read). */
tr_status tr_load(const char *path, int partial, tr_trace *t, char *msg, size_t msgsize);

void tr_free(tr_trace *t);

/* Names of a memory kind ("device", "pinned", ...; "unknown"), an event type
 * ("alloc", ...), a copy direction ("host-to-device", ...). */
const char *tr_kind_name(int kind);
const char *tr_type_name(int type);
const char *tr_direction_name(int direction);
/* Who holds an allocation (an alloc's aux, GM_TO_*): "program", "copy
 * scratch", "staging slots", "bounce blocks", "copy temporaries". */
const char *tr_owner_name(int owner);

/* String id's text; "" for 0 or an id the trace lacks. */
const char *tr_str(const tr_trace *t, uint32_t id);

/* A frame's description: "function+0xOFF (file)" when its module's file
 * can be read and names it, else "file+0xVADDR", else "0xADDR". */
const char *tr_frame_name(const tr_trace *t, const tr_frame *f, char *buf, size_t size);

/* Drops the symbol tables that tr_frame_name read. */
void tr_symbols_free(void);

/* What tr_frame_name may read of the module files a trace names (a trace is
 * untrusted): one file at most TR_SYMBOLS_MAX_FILE bytes, all of them at
 * most TR_SYMBOLS_MAX_TOTAL. */
#define TR_SYMBOLS_MAX_FILE ((uint64_t)1 << 30)
#define TR_SYMBOLS_MAX_TOTAL ((uint64_t)4 << 30)

/* What tr_frame_name did since the start (or tr_symbols_free): distinct
 * module names looked up, files read (each device and inode once, however
 * many names it has) and their bytes, names refused (missing, not a regular
 * file, empty, too large, on /proc or /sys, not ELF, past the total). */
typedef struct tr_symbols_stats {
    uint64_t names, files_read, bytes_read, refused;
} tr_symbols_stats;
void tr_symbols_get_stats(tr_symbols_stats *s);

#endif /* GPUMEM_TOOLS_TRACE_READ_H */

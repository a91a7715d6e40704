/**
 * @file gpumem/dtype.h
 * @brief Element types: NumPy's builtin dtypes, records (structured dtypes),
 *        and NumPy's typestr and descr notations.
 *
 * A ::gpumem_dtype describes one array element.  Builtins
 * (gpumem_dtype_builtin()) are static and need no release.  Dtypes made by
 * gpumem_dtype_from_typestr(), gpumem_dtype_from_descr() and
 * gpumem_dtype_record_create() are reference-counted: every array that uses
 * one holds a reference, and gpumem_dtype_release() drops the caller's.
 *
 * @par Notation (NumPy's array interface)
 * A typestr is a byte-order character ('<' little, '>' big, '|' not
 * applicable, '=' native), a kind character and the item size in bytes:
 * "<f4", ">i8", "|b1", "|u1", "<c16", "|V16" (16 raw bytes).  A descr is the
 * list of fields of a record, written as NumPy writes it:
 * "[('x', '<f4'), ('pos', '<f8', (3,)), ('inner', [('a', '|u1')])]".
 * Records also have gaps and padding; a descr writes a gap as a field with an
 * empty name ('', '|V4'), as NumPy's __array_interface__ does.
 *
 * @par Sharing
 * A dtype never changes after it is made, so threads may share one; its
 * reference count is atomic.  Functions that fail leave their outputs alone,
 * except the string writers (see gpumem_dtype_typestr()).
 */
#ifndef GPUMEM_DTYPE_H
#define GPUMEM_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <gpumem/export.h>
#include <gpumem/status.h>

GPUMEM_BEGIN_DECLS

/** An element type. */
typedef struct gpumem_dtype gpumem_dtype;

/** The builtin element types (in native byte order).  Values are ABI. */
typedef enum gpumem_type {
    GPUMEM_BOOL = 0,        /**< |b1 */
    GPUMEM_INT8 = 1,        /**< |i1 */
    GPUMEM_INT16 = 2,       /**< i2 */
    GPUMEM_INT32 = 3,       /**< i4 */
    GPUMEM_INT64 = 4,       /**< i8 */
    GPUMEM_UINT8 = 5,       /**< |u1 */
    GPUMEM_UINT16 = 6,      /**< u2 */
    GPUMEM_UINT32 = 7,      /**< u4 */
    GPUMEM_UINT64 = 8,      /**< u8 */
    GPUMEM_FLOAT16 = 9,     /**< f2 */
    GPUMEM_FLOAT32 = 10,    /**< f4 */
    GPUMEM_FLOAT64 = 11,    /**< f8 */
    GPUMEM_COMPLEX64 = 12,  /**< c8: two float32 */
    GPUMEM_COMPLEX128 = 13, /**< c16: two float64 */
    GPUMEM_RECORD = 14,     /**< a structured dtype (gpumem_dtype_record_create) */
    GPUMEM_VOID = 15        /**< |Vn: n raw bytes */
} gpumem_type;

/** Byte order of a dtype's scalars.  Values are ABI. */
typedef enum gpumem_byteorder {
    GPUMEM_BYTEORDER_NA = 0,     /**< '|': one-byte types, records and raw bytes */
    GPUMEM_BYTEORDER_LITTLE = 1, /**< '<' */
    GPUMEM_BYTEORDER_BIG = 2     /**< '>' */
} gpumem_byteorder;

/** One field of a record, for gpumem_dtype_record_create(). */
typedef struct gpumem_field {
    const char *name;            /**< unique, non-empty (the record keeps a copy) */
    const gpumem_dtype *dtype;   /**< the field's element type (may itself be a record) */
    int64_t offset;              /**< byte offset in the record, or -1: after the previous field */
    int ndim;                    /**< 0 for a scalar field, else a sub-array of this many dimensions (at most 32) */
    const int64_t *shape;        /**< the sub-array's shape (ndim extents, each >= 0) */
} gpumem_field;

/** Layout rules for fields with offset -1.  Values are ABI. */
typedef enum gpumem_record_layout {
    /** No padding (NumPy's default, align=False): a field with offset -1
     *  starts where the previous one ends; the record's alignment is 1. */
    GPUMEM_RECORD_PACKED = 0,
    /** C struct layout (NumPy's align=True): a field with offset -1 starts
     *  at the next multiple of its alignment after the previous one, the
     *  size is rounded up to the largest field alignment, which is the
     *  record's alignment.  As in NumPy, explicit offsets must be multiples
     *  of their field's alignment, and an explicit itemsize a multiple of
     *  the record's. */
    GPUMEM_RECORD_ALIGNED = 1
} gpumem_record_layout;

/**
 * A builtin dtype in native byte order: a static object, never NULL for a
 * valid @p type (NULL, with gpumem_last_error() set, for GPUMEM_RECORD,
 * GPUMEM_VOID or an unknown value).  Its byte order is
 * ::GPUMEM_BYTEORDER_LITTLE or ::GPUMEM_BYTEORDER_BIG, as the machine's
 * (::GPUMEM_BYTEORDER_NA for one-byte types).
 * @param type a builtin type.
 * @return the dtype, or NULL (with ::GPUMEM_ERROR_INVALID_VALUE as the thread's last status).
 */
GPUMEM_API const gpumem_dtype *gpumem_dtype_builtin(gpumem_type type);

#if defined(GPUMEM_DOXYGEN) || (!defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
/**
 * The ::gpumem_type of the type of expression @p x (C11's _Generic; @p x is
 * not evaluated): _Bool is ::GPUMEM_BOOL; char, signed and unsigned char,
 * short, int, long and long long (and the <stdint.h> types they name) the
 * integer type of their size and signedness (char's as the platform signs
 * it); float ::GPUMEM_FLOAT32, double ::GPUMEM_FLOAT64, float _Complex
 * ::GPUMEM_COMPLEX64 and double _Complex ::GPUMEM_COMPLEX128 (unless the
 * compiler defines __STDC_NO_COMPLEX__).  Any other type (long double, a
 * pointer, a struct, an array that decayed to a pointer: give an element,
 * `host[0][0]` or `*buf`) does not compile.  C11 and later only; C++ has
 * gpumem::dtype_of() in gpumem.hpp instead.  Added in GPUMEM_1.1.
 * @param x an expression of a builtin element type.
 */
#define GPUMEM_TYPE_OF(x) \
    _Generic((x), \
        _Bool: GPUMEM_BOOL, \
        char: ((char)-1 < 0 ? GPUMEM_INT8 : GPUMEM_UINT8), \
        signed char: GPUMEM_INT8, \
        unsigned char: GPUMEM_UINT8, \
        short: (sizeof(short) == 2 ? GPUMEM_INT16 : GPUMEM_INT32), \
        unsigned short: (sizeof(short) == 2 ? GPUMEM_UINT16 : GPUMEM_UINT32), \
        int: (sizeof(int) == 4 ? GPUMEM_INT32 : sizeof(int) == 8 ? GPUMEM_INT64 : GPUMEM_INT16), \
        unsigned: (sizeof(int) == 4 ? GPUMEM_UINT32 : sizeof(int) == 8 ? GPUMEM_UINT64 : GPUMEM_UINT16), \
        long: (sizeof(long) == 8 ? GPUMEM_INT64 : GPUMEM_INT32), \
        unsigned long: (sizeof(long) == 8 ? GPUMEM_UINT64 : GPUMEM_UINT32), \
        long long: GPUMEM_INT64, \
        unsigned long long: GPUMEM_UINT64, \
        float: GPUMEM_FLOAT32, \
        double: GPUMEM_FLOAT64 GPUMEM_TYPE_OF_COMPLEX_)
/// @cond
#ifdef __STDC_NO_COMPLEX__
#define GPUMEM_TYPE_OF_COMPLEX_
#else
#define GPUMEM_TYPE_OF_COMPLEX_ , float _Complex: GPUMEM_COMPLEX64, double _Complex: GPUMEM_COMPLEX128
#endif
/// @endcond

/**
 * The builtin dtype of the type of expression @p x, in native byte order:
 * gpumem_dtype_builtin(GPUMEM_TYPE_OF(x)), so `GPUMEM_DTYPE_OF(host[0][0])`
 * for `float host[4][6]` is the float32 dtype.  C11 and later only (see
 * GPUMEM_TYPE_OF()); gpumem.hpp's gpumem::dtype_of() is C++'s.  Added in
 * GPUMEM_1.1.
 * @param x an expression of a builtin element type (not evaluated).
 */
#define GPUMEM_DTYPE_OF(x) gpumem_dtype_builtin(GPUMEM_TYPE_OF(x))
#endif

/**
 * Parses a NumPy typestr such as "<f4", ">i2", "|b1" or "|V16": a byte
 * order, a kind (b i u f c V) and the size in bytes (b1; i and u 1, 2, 4,
 * 8; f 2, 4, 8; c 8, 16; V 1 or more).  '=' is the native order; '|' is only
 * for one-byte types and V, which take any order character.  Builtins come
 * back as the same static objects in either byte order (releasing them is a
 * no-op, so callers may release every result); "|Vn" is a new
 * ::GPUMEM_VOID dtype.  Malformed strings are ::GPUMEM_ERROR_INVALID_DTYPE
 * with a message that quotes the string and says what is wrong.
 * @param typestr the typestr.
 * @param[out] dtype the dtype; release it with gpumem_dtype_release().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DTYPE,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_dtype_from_typestr(const char *typestr, gpumem_dtype **dtype);

/**
 * Writes the typestr of a dtype ("<f4"; "|V24" for a record of 24 bytes)
 * into @p buf of @p size bytes, with an explicit order for multi-byte types
 * and '|' for the others, as NumPy's __array_interface__.  If it does not
 * fit, ::GPUMEM_ERROR_INVALID_VALUE, the message says how many bytes it
 * needs, and @p buf holds "" (unless @p size is 0: then nothing is written,
 * and @p buf may be NULL, as snprintf's).  24 bytes always do.
 * @param dtype the dtype.
 * @param[out] buf room for @p size bytes (may be NULL when @p size is 0).
 * @param size the size of @p buf.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p dtype; @p buf with @p size > 0),
 *         ::GPUMEM_ERROR_INVALID_VALUE (too small).
 */
GPUMEM_API gpumem_status gpumem_dtype_typestr(const gpumem_dtype *dtype, char *buf, size_t size);

/**
 * Parses a NumPy descr (see above) into a record dtype.  It is read as the
 * Python literal it is: any whitespace, ' or " strings with Python's
 * escapes, trailing commas, a shape as an int or a tuple ("(3,)", "(2, 3)",
 * "()").  Refused are the named escape (backslash, N, a name in
 * braces), since it needs Python's Unicode database (write the character,
 * or its code point with the \\u or \\U escape), and an escape of a
 * surrogate (U+D800 to U+DFFF) or of a code point past U+10FFFF, which
 * UTF-8 names cannot hold.  Entries with an empty name are
 * gaps (padding), so offsets follow from the order, and the record is packed (NumPy does the same).  In a
 * field, a list is always a record; the whole descr [('', '<f4')] (or
 * [('', '|V16')]) is that builtin (or raw bytes), and a bare or quoted
 * typestr is accepted too.  gpumem_dtype_from_descr() of
 * gpumem_dtype_descr() gives a dtype gpumem_dtype_equal() to the original.
 * Errors are ::GPUMEM_ERROR_INVALID_DTYPE, saying where and why.
 * @param descr the descr.
 * @param[out] dtype the dtype; release it with gpumem_dtype_release().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DTYPE,
 *        ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_dtype_from_descr(const char *descr, gpumem_dtype **dtype);

/**
 * Writes a dtype's descr: the field list of a record, or "[('', '<f4')]" for
 * a builtin, exactly as NumPy's __array_interface__ does (', ' between
 * items, names as Python's repr() writes them, "(3,)" and "(2, 3)" for
 * shapes, ('', '|Vn') for gaps and trailing padding).  In a name, the
 * characters that Python's str.isprintable() rejects (Unicode 14.0, as in
 * Python 3.11) are escaped as \\xNN, \\uNNNN or \\UNNNNNNNN, as repr() does.  A record whose fields
 * are not in increasing offset order has no descr, as in NumPy:
 * ::GPUMEM_ERROR_INVALID_DTYPE.  Buffers that are too small are handled as
 * in gpumem_dtype_typestr() (@p size 0 with a NULL @p buf included).
 * @param dtype the dtype.
 * @param[out] buf room for @p size bytes (may be NULL when @p size is 0).
 * @param size the size of @p buf.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_DTYPE (no descr),
 *        ::GPUMEM_ERROR_INVALID_VALUE (too small).
 */
GPUMEM_API gpumem_status gpumem_dtype_descr(const gpumem_dtype *dtype, char *buf, size_t size);

/**
 * Makes a record dtype from @p nfields fields, kept in the given order
 * (@p fields may be NULL when @p nfields is 0).  @p itemsize 0 computes the
 * size (rounded up to the alignment for ::GPUMEM_RECORD_ALIGNED); a larger
 * value adds trailing padding.  The record copies the names and holds a
 * reference to each field's dtype, so the caller may release those.
 * Errors, ::GPUMEM_ERROR_INVALID_DTYPE with a message naming the field:
 * empty, NULL or duplicate names, a NULL dtype, overlapping fields, negative
 * offsets (other than -1) or extents, more than 32 dimensions, a field past
 * @p itemsize, sizes that overflow, records nested more than 64 deep, and
 * the ::GPUMEM_RECORD_ALIGNED rules.
 * @param[in] fields @p nfields fields.
 * @param nfields the number of fields.
 * @param layout packed or aligned.
 * @param itemsize the record's size, or 0 to compute it.
 * @param[out] dtype the new record; release it with gpumem_dtype_release().
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_VALUE (@p layout),
 *        ::GPUMEM_ERROR_INVALID_DTYPE, ::GPUMEM_ERROR_HOST_OUT_OF_MEMORY.
 */
GPUMEM_API gpumem_status gpumem_dtype_record_create(const gpumem_field *fields, size_t nfields,
                                                    gpumem_record_layout layout, size_t itemsize,
                                                    gpumem_dtype **dtype);

/**
 * Adds a reference (a no-op for builtins); atomic.
 * @param dtype the dtype.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_INVALID_STATE (its last reference went).
 */
GPUMEM_API gpumem_status gpumem_dtype_retain(const gpumem_dtype *dtype);

/**
 * Drops a reference (a no-op for builtins and NULL); the last one frees
 * the dtype.  Releasing it again, or using it afterwards, is
 * ::GPUMEM_ERROR_INVALID_STATE (gpumem/status.h says how far that is
 * detected); a release while others hold references (arrays of the dtype,
 * records with a field of it) cannot be told from a rightful one.
 * @param dtype the dtype, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_INVALID_STATE (its last reference went), ::GPUMEM_ERROR_INVALID_VALUE
 *         (not a dtype).
 */
GPUMEM_API gpumem_status gpumem_dtype_release(const gpumem_dtype *dtype);

/**
 * The size of one element in bytes.
 * @param dtype the dtype.
 * @param[out] itemsize bytes per element.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_dtype_itemsize(const gpumem_dtype *dtype, size_t *itemsize);

/**
 * The alignment of one element in bytes: the item size for builtins, the
 * component's for complex types, 1 for raw bytes and packed records, the
 * largest field's for aligned records.
 * @param dtype the dtype.
 * @param[out] alignment the alignment in bytes.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_dtype_alignment(const gpumem_dtype *dtype, size_t *alignment);

/**
 * The type (a builtin's, GPUMEM_RECORD or GPUMEM_VOID) and the byte order
 * (never native: '=' was resolved).  Either out-parameter may be NULL.
 * @param dtype the dtype.
 * @param[out] type the type, or NULL.
 * @param[out] order the byte order, or NULL.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT (@p dtype).
 */
GPUMEM_API gpumem_status gpumem_dtype_type(const gpumem_dtype *dtype, gpumem_type *type,
                                           gpumem_byteorder *order);

/**
 * 1 when two dtypes describe the same layout (names, offsets, types, byte
 * order, sub-array shapes, size, recursively), else 0 (also when either is
 * NULL).  Alignment is not compared: a descr does not carry it.  A record
 * without fields equals raw bytes of its size (both have the descr
 * [('', '|Vn')]).
 * @param a a dtype, or NULL.
 * @param b a dtype, or NULL.
 * @return 1 or 0.
 */
GPUMEM_API int gpumem_dtype_equal(const gpumem_dtype *a, const gpumem_dtype *b);

/**
 * The number of named fields of a record (0 for other dtypes).
 * @param dtype the dtype.
 * @param[out] count the number of fields.
 * @return ::GPUMEM_OK, or ::GPUMEM_ERROR_NULL_ARGUMENT.
 */
GPUMEM_API gpumem_status gpumem_dtype_field_count(const gpumem_dtype *dtype, size_t *count);

/**
 * Field @p index of a record: its name (valid while the dtype lives), dtype
 * (borrowed), byte offset and sub-array shape (@p shape may be NULL;
 * otherwise it has room for 32 extents).  Any out-parameter may be NULL.
 * An index past the last field (any index for a non-record) is
 * ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE.
 * @param dtype the record.
 * @param index the field's index.
 * @param[out] name its name, or NULL.
 * @param[out] field_dtype its dtype, or NULL.
 * @param[out] offset its byte offset, or NULL.
 * @param[out] ndim its sub-array's dimensions, or NULL.
 * @param[out] shape its sub-array's extents, or NULL.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT (@p dtype), ::GPUMEM_ERROR_INDEX_OUT_OF_RANGE.
 */
GPUMEM_API gpumem_status gpumem_dtype_field(const gpumem_dtype *dtype, size_t index, const char **name,
                                            const gpumem_dtype **field_dtype, int64_t *offset, int *ndim,
                                            int64_t *shape);

/**
 * Looks a field up by name; ::GPUMEM_ERROR_NOT_FOUND, naming it, if there is none.
 * @param dtype the record.
 * @param name the field's name.
 * @param[out] index its index.
 * @return ::GPUMEM_OK; ::GPUMEM_ERROR_NULL_ARGUMENT, ::GPUMEM_ERROR_NOT_FOUND.
 */
GPUMEM_API gpumem_status gpumem_dtype_field_index(const gpumem_dtype *dtype, const char *name,
                                                  size_t *index);

GPUMEM_END_DECLS

#endif /* GPUMEM_DTYPE_H */

/**
 * @file gpumem.hpp
 * @brief C++17 RAII wrappers over the C API: header-only, no state, no symbols.
 *
 * Every member function here is an inline call of the C function it names,
 * with the same arguments, the same ownership rules and the same errors; a
 * failure throws gpumem::error, which carries the status, the thread's
 * gpumem_last_error() message and the member that failed: its what() reads
 * "gpumem::array::copy_from: GPUMEM_ERROR_SHAPE_MISMATCH: gpumem_array_copy:
 * ...", the member first, then the C function's own message.  The header adds no library, no global state
 * and no exported symbol: the C library's ABI (libgpumem.so.1) stays the only
 * one, and `pkg-config --cflags --libs gpumem` is all a C++ program needs.
 *
 * @par Ownership
 * - Reference-counted C handles are copyable; a copy is a retain, a
 *   destructor a release: gpumem::context, gpumem::array, gpumem::dtype,
 *   gpumem::module.
 * - Handles the C API ends exactly once are move-only; the destructor ends
 *   them: gpumem::stream (gpumem_stream_destroy), gpumem::event
 *   (gpumem_event_destroy), gpumem::pool and
 *   gpumem::host_pool (gpumem_pool_destroy, gpumem_host_pool_destroy),
 *   gpumem::allocation (gpumem_allocation_free with no stream),
 *   gpumem::registration (gpumem_unpinned, gpumem_unmapped or
 *   gpumem_deregister), gpumem::device_data, and the scope guards
 *   gpumem::auto_synchronize and gpumem::defer_cleanup (these two are
 *   move-constructible, so a function may return one, but not assignable).
 *   A moved-from wrapper is empty: its destructor ends nothing.
 * - Borrowed C results (a stream's or array's context, the default stream,
 *   gpumem_autoinit()) are retained when they become an owning wrapper, and
 *   are gpumem::stream_ref (never owning) where the C API has no reference
 *   count.
 * - Destructors cannot throw, so they drop the status of the C call; call the
 *   explicit member (destroy(), free(), end()) where the status matters, as
 *   for gpumem_stream_destroy(), which synchronizes.
 * - get() gives the C handle for any C function not wrapped here; adopt()
 *   takes over a reference the caller owns, share() retains a borrowed one.
 *
 * @par Copies are named by their direction
 * a.copy_to(b) is b[:] = a and a.copy_from(b) is a[:] = b, any kinds;
 * d.copy_to_host(h) copies d into the host-side h, d.copy_from_host(h) the
 * host-side h into d.  numba's d.copy_to_device(h), which copies h into d
 * although it reads the other way round, is deprecated for copy_from_host.
 *
 * An empty gpumem::context (default-constructed) is NULL in C, which every
 * function taking a context reads as the autoinit context; an empty
 * gpumem::stream_ref is a NULL stream: synchronous.
 *
 * An empty gpumem::array (after release() or detach(), moved from, or
 * default-constructed) is no array: a member called on it, or any call given
 * it as an array, throws ::GPUMEM_ERROR_INVALID_STATE, whose message says
 * that the array, or the parameter it was given as ("'src' was released"),
 * was released; release() of an empty array does nothing.
 *
 * @par Example (examples/cpp/first.cpp)
 * @code
 * auto ctx = gpumem::context::create_default();
 * float host[4][6] = {};
 * auto d = gpumem::to_device(ctx, gpumem::wrap(&host[0][0], {4, 6}));
 * auto cols = d.slice({gpumem::all, {0, 6, 2}});     // d[:, ::2], a view
 * float out[4][3];
 * cols.copy_to_host(gpumem::wrap(&out[0][0], {4, 3}));
 * @endcode
 */
#ifndef GPUMEM_HPP
#define GPUMEM_HPP

#if __cplusplus < 201703L
#error "gpumem.hpp needs C++17 (use <gpumem.h> from older C++)"
#endif

#include <gpumem.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#include <ranges>
#endif

namespace gpumem {

/* ---- errors ------------------------------------------------------------------------------ */

/**
 * A failed call: the status, the thread's gpumem_last_error() at the time of
 * the failure, and the C++ member that made the call.  what() is
 * "member: STATUS: message", such as "gpumem::array::copy_from:
 * GPUMEM_ERROR_SHAPE_MISMATCH: gpumem_array_copy: 'dst' has shape (4,) but
 * 'src' has shape (3,)": the member you called, the status' name, and the C
 * function's own message, which names the C function and its parameter.
 */
class error : public std::runtime_error {
public:
    /**
     * The error of the C call that just failed with @p status (reads
     * gpumem_last_error()); what() is "STATUS: message", with no member.
     * @param status the status of the failed call.
     */
    explicit error(gpumem_status status)
        : std::runtime_error(std::string(gpumem_status_string(status)) + ": " + gpumem_last_error()),
          status_(status) {}
    /**
     * An error this header found itself, with its own message; what() is "STATUS: message".
     * @param status the status.
     * @param message what went wrong.
     */
    error(gpumem_status status, const std::string &message)
        : std::runtime_error(std::string(gpumem_status_string(status)) + ": " + message), status_(status) {}
    /**
     * The error of the C call that member @p member (such as
     * "gpumem::array::copy_from", a string literal) made and that just failed
     * with @p status; what() is "member: STATUS: message", the message
     * gpumem_last_error()'s.
     * @param member the C++ member or function, a string that outlives the error.
     * @param status the status of the failed call.
     */
    error(const char *member, gpumem_status status)
        : std::runtime_error(std::string(member) + ": " + gpumem_status_string(status) + ": " + gpumem_last_error()),
          status_(status), member_(member) {}
    /**
     * An error that member @p member found itself (a size or a rank that
     * does not match); what() is "member: STATUS: message".
     * @param member the C++ member or function, a string that outlives the error.
     * @param status the status.
     * @param message what went wrong.
     */
    error(const char *member, gpumem_status status, const std::string &message)
        : std::runtime_error(std::string(member) + ": " + gpumem_status_string(status) + ": " + message),
          status_(status), member_(member) {}
    /** The status code. @return the status. */
    gpumem_status status() const noexcept { return status_; }
    /** Its name, such as "GPUMEM_ERROR_OUT_OF_MEMORY". @return the name (static). */
    const char *name() const noexcept { return gpumem_status_string(status_); }
    /** The C++ member that failed, such as "gpumem::array::copy_from"; "" when none was named. @return it. */
    const char *member() const noexcept { return member_; }

private:
    gpumem_status status_;
    const char *member_ = "";
};

/** What gpumem::pool_resource throws when the page-locked pool cannot allocate: a std::bad_alloc with the status. */
class bad_alloc : public std::bad_alloc {
public:
    /**
     * The error of a failed allocation with @p status (reads gpumem_last_error()).
     * @param status the status.
     */
    explicit bad_alloc(gpumem_status status)
        : status_(status), what_(std::string(gpumem_status_string(status)) + ": " + gpumem_last_error()) {}
    /**
     * The error of an allocation that member @p member made and that failed with @p status: what()
     * is "member: STATUS: message", @p message or, when it is null, gpumem_last_error().
     * @param member the C++ member, such as "gpumem::pool_resource::allocate".
     * @param status the status.
     * @param message what went wrong, or nullptr for the thread's gpumem_last_error().
     */
    bad_alloc(const char *member, gpumem_status status, const char *message = nullptr)
        : status_(status), what_(std::string(member) + ": " + gpumem_status_string(status) + ": " +
                                 (message != nullptr ? message : gpumem_last_error())) {}
    /** The member, the status' name and the message. @return the message. */
    const char *what() const noexcept override { return what_.c_str(); }
    /** The status code. @return the status. */
    gpumem_status status() const noexcept { return status_; }

private:
    gpumem_status status_;
    std::string what_;
};

/** Throws gpumem::error unless @p status is GPUMEM_OK. @param status a status. */
inline void check(gpumem_status status)
{
    if (status != GPUMEM_OK)
        throw error(status);
}

/**
 * Throws gpumem::error(@p member, @p status) unless @p status is GPUMEM_OK:
 * the wrappers' check, which names the member that made the call.
 * @param member the C++ member or function, such as "gpumem::array::copy_from" (a string literal).
 * @param status a status.
 */
inline void check(const char *member, gpumem_status status)
{
    if (status != GPUMEM_OK)
        throw error(member, status);
}

/* ---- small value types ------------------------------------------------------------------- */

/**
 * A shape or a list of strides: up to GPUMEM_MAX_NDIM int64_t values, kept
 * inline (no allocation), and a contiguous range (begin/end/data/size).
 */
class dims {
public:
    dims() noexcept = default;
    /**
     * From a list of integers of one type: dims{4, 6}, or {n, m} of
     * std::size_t (no narrowing error: each value is converted, and one
     * that int64_t cannot hold throws GPUMEM_ERROR_OVERFLOW).
     * @param values up to GPUMEM_MAX_NDIM values.
     */
    template <class I, class = std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>>>
    dims(std::initializer_list<I> values)
    {
        int64_t v[GPUMEM_MAX_NDIM];
        std::size_t n = 0;
        for (I x : values) {
            if (n < GPUMEM_MAX_NDIM)
                v[n] = to_int64(x);
            n++;
        }
        assign(v, n);
    }
    /**
     * From integers of mixed types, two or more: {n, 3} with n a std::size_t
     * (a braced list of one type takes the constructor above).
     * @param values 2 to GPUMEM_MAX_NDIM values.
     */
    template <class... I, class = std::enable_if_t<(sizeof...(I) >= 2) &&
                                                   ((std::is_integral_v<I> && !std::is_same_v<I, bool>) && ...)>>
    dims(I... values)
    {
        const int64_t v[] = {to_int64(values)...};
        assign(v, sizeof...(I));
    }
    /**
     * From any range of integers (std::vector<std::size_t>, std::array,
     * another dims, ...); a value that int64_t cannot hold throws
     * GPUMEM_ERROR_OVERFLOW.
     * @param range the values.
     */
    template <class Range, class = decltype(std::begin(std::declval<const Range &>())),
              class = std::enable_if_t<!std::is_same_v<std::decay_t<Range>, dims>>>
    explicit dims(const Range &range)
    {
        std::vector<int64_t> v;
        for (auto x : range)
            v.push_back(to_int64(x));
        assign(v.data(), v.size());
    }
    /** The number of values. @return 0 to GPUMEM_MAX_NDIM. */
    int size() const noexcept { return n_; }
    /** Whether there are no values (a 0-d shape). @return true when size() is 0. */
    bool empty() const noexcept { return n_ == 0; }
    /** The values. @return a pointer to size() values. */
    const int64_t *data() const noexcept { return v_; }
    /** The values, writable (for C out-parameters). @return a pointer to size() values. */
    int64_t *data() noexcept { return v_; }
    /** The first value. @return data(). */
    const int64_t *begin() const noexcept { return v_; }
    /** One past the last value. @return data() + size(). */
    const int64_t *end() const noexcept { return v_ + n_; }
    /** Value @p i (not checked). @param i 0 to size() - 1. @return the value. */
    int64_t operator[](int i) const noexcept { return v_[i]; }
    /** Value @p i, writable (not checked). @param i 0 to size() - 1. @return a reference to it. */
    int64_t &operator[](int i) noexcept { return v_[i]; }
    /** The product of the values: the element count of a shape. @return the product (1 for no values). */
    int64_t product() const noexcept
    {
        int64_t p = 1;
        for (int i = 0; i < n_; i++)
            p *= v_[i];
        return p;
    }
    /**
     * Gives the size (0 to GPUMEM_MAX_NDIM); the values are uninitialized, for C out-parameters.
     * @param n the new size.
     */
    void resize(int n) { assign(nullptr, static_cast<size_t>(n)); }
    /** Equal sizes and values. @param a a list. @param b a list. @return whether they are equal. */
    friend bool operator==(const dims &a, const dims &b) noexcept
    {
        return a.n_ == b.n_ && std::memcmp(a.v_, b.v_, sizeof(int64_t) * static_cast<size_t>(a.n_)) == 0;
    }
    /** Not operator==. @param a a list. @param b a list. @return whether they differ. */
    friend bool operator!=(const dims &a, const dims &b) noexcept { return !(a == b); }

private:
    template <class I>
    static int64_t to_int64(I x)
    {
        static_assert(std::is_integral_v<I>, "shapes, strides and indices are integers");
        if constexpr (std::is_unsigned_v<I>) {
            if (static_cast<unsigned long long>(x) > static_cast<unsigned long long>(INT64_MAX))
                throw error("gpumem::dims::dims", GPUMEM_ERROR_OVERFLOW,
                            "the value " + std::to_string(static_cast<unsigned long long>(x)) +
                                " does not fit in int64_t");
        }
        return static_cast<int64_t>(x);
    }
    void assign(const int64_t *p, size_t n)
    {
        if (n > GPUMEM_MAX_NDIM)
            throw error("gpumem::dims::dims", GPUMEM_ERROR_TOO_MANY_DIMENSIONS,
                        std::to_string(n) + " values, more than GPUMEM_MAX_NDIM (32)");
        n_ = static_cast<int>(n);
        if (p != nullptr && n != 0)
            std::memcpy(v_, p, n * sizeof(int64_t));
    }
    int64_t v_[GPUMEM_MAX_NDIM] = {};
    int n_ = 0;
};

/**
 * A view of contiguous host memory: a pointer and a count.  In C++20 it
 * converts to std::span and is a borrowed view for std::ranges.
 */
template <class T>
class span {
public:
    /** The element type. */
    using element_type = T;
    /** The element type without const. */
    using value_type = std::remove_cv_t<T>;
    /** The type of size(). */
    using size_type = std::size_t;
    /** The iterator type. */
    using iterator = T *;
    constexpr span() noexcept = default;
    /**
     * A view of @p size elements at @p data.
     * @param data the first element.
     * @param size the number of elements.
     */
    constexpr span(T *data, std::size_t size) noexcept : p_(data), n_(size) {}
    /** The first element. @return the pointer. */
    constexpr T *data() const noexcept { return p_; }
    /** The number of elements. @return the count. */
    constexpr std::size_t size() const noexcept { return n_; }
    /** Whether there are no elements. @return true when size() is 0. */
    constexpr bool empty() const noexcept { return n_ == 0; }
    /** The first element. @return data(). */
    constexpr T *begin() const noexcept { return p_; }
    /** One past the last element. @return data() + size(). */
    constexpr T *end() const noexcept { return p_ + n_; }
    /** Element @p i (not checked). @param i 0 to size() - 1. @return a reference to it. */
    constexpr T &operator[](std::size_t i) const noexcept { return p_[i]; }
#if defined(__cpp_lib_span)
    constexpr operator std::span<T>() const noexcept { return std::span<T>(p_, n_); }
#endif

private:
    T *p_ = nullptr;
    std::size_t n_ = 0;
};

/** The whole axis, Python's `:` (GPUMEM_SLICE_ALL). */
inline constexpr gpumem_slice all = GPUMEM_SLICE_ALL;
/** An omitted slice bound (Python's None): {gpumem::none, gpumem::none, -1} reverses an axis. */
inline constexpr int64_t none = GPUMEM_SLICE_DEFAULT;
/**
 * One entry of gpumem::array::slice(): a gpumem_slice (gpumem::all,
 * gpumem::index(i)), or {start, stop} or {start, stop, step} written in
 * place, which, unlike C's aggregate {start, stop}, leaves no field out
 * (-Wextra's missing-field-initializers stays quiet).
 */
class slice_spec {
public:
    /** A C slice as it is (gpumem::all, gpumem::index(i), ...). @param s the slice. */
    constexpr slice_spec(const gpumem_slice &s) noexcept : s_(s) {}
    /**
     * Python's start:stop:step; gpumem::none for an omitted bound.
     * @param start the first index.
     * @param stop the index it stops before.
     * @param step the distance between indices (default 1).
     */
    constexpr slice_spec(int64_t start, int64_t stop, int64_t step = 1) noexcept : s_{start, stop, step} {}
    /** The C slice. @return it. */
    constexpr gpumem_slice get() const noexcept { return s_; }

private:
    gpumem_slice s_;
};

/**
 * The integer index @p i (negative: from the end) as a slice that drops its
 * axis (GPUMEM_INDEX): `d.slice({gpumem::index(1), {1, -1}})` is NumPy's
 * `d[1, 1:-1]`, a 1-D view.
 * @param i the position.
 * @return the slice.
 */
constexpr gpumem_slice index(int64_t i) noexcept { return gpumem_slice{i, GPUMEM_SLICE_INDEX, 1}; }

/** The builtin element type of a C++ type: integers by size and sign, bool, float, double, std::complex. */
template <class T, class = void>
struct builtin_type; /* no value: the type has no builtin dtype */
/// @cond
// The specializations: each has a `value`, the gpumem_type of T.
template <class T>
struct builtin_type<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
    static constexpr gpumem_type value =
        sizeof(T) == 1   ? (std::is_signed_v<T> ? GPUMEM_INT8 : GPUMEM_UINT8)
        : sizeof(T) == 2 ? (std::is_signed_v<T> ? GPUMEM_INT16 : GPUMEM_UINT16)
        : sizeof(T) == 4 ? (std::is_signed_v<T> ? GPUMEM_INT32 : GPUMEM_UINT32)
                         : (std::is_signed_v<T> ? GPUMEM_INT64 : GPUMEM_UINT64);
    static_assert(sizeof(T) <= 8, "no builtin dtype for integers wider than 64 bits");
};
template <> struct builtin_type<bool> { static constexpr gpumem_type value = GPUMEM_BOOL; };
template <> struct builtin_type<float> { static constexpr gpumem_type value = GPUMEM_FLOAT32; };
template <> struct builtin_type<double> { static constexpr gpumem_type value = GPUMEM_FLOAT64; };
template <> struct builtin_type<std::complex<float>> { static constexpr gpumem_type value = GPUMEM_COMPLEX64; };
template <> struct builtin_type<std::complex<double>> { static constexpr gpumem_type value = GPUMEM_COMPLEX128; };
/// @endcond

/**
 * The builtin dtype's type of an expression's type, C++'s GPUMEM_TYPE_OF:
 * type_of<float>() is GPUMEM_FLOAT32.  A type with no builtin dtype does not compile.
 * @return the type.
 */
template <class T>
constexpr gpumem_type type_of() noexcept
{
    return builtin_type<std::remove_cv_t<std::remove_reference_t<T>>>::value;
}

/** gpumem_memory_kind_name(). @param kind a memory kind. @return its name ("device", "pinned", ...). */
inline const char *memory_kind_name(gpumem_memory_kind kind) noexcept { return gpumem_memory_kind_name(kind); }

class array;
class stream;
class pool;

/* ---- dtypes ------------------------------------------------------------------------------ */

/** An element type (gpumem/dtype.h); copy = gpumem_dtype_retain (a no-op for builtins). */
class dtype {
public:
    dtype() noexcept = default;
    /** gpumem_dtype_builtin(@p type). @param type a builtin type. @return the dtype. */
    static dtype builtin(gpumem_type type)
    {
        const gpumem_dtype *d = gpumem_dtype_builtin(type);
        if (d == nullptr)
            throw error("gpumem::dtype::builtin", gpumem_last_status());
        return dtype(d);
    }
    /**
     * The builtin dtype of @p T (float: GPUMEM_FLOAT32, std::complex<double>: GPUMEM_COMPLEX128, ...).
     * @return the dtype.
     */
    template <class T>
    static dtype of() { return builtin(builtin_type<T>::value); }
    /**
     * gpumem_dtype_from_typestr(): NumPy's "<f4", "|V16", ...
     * @param typestr the typestr.
     * @return the dtype.
     */
    static dtype from_typestr(const char *typestr)
    {
        gpumem_dtype *d = nullptr;
        check("gpumem::dtype::from_typestr", gpumem_dtype_from_typestr(typestr, &d));
        return dtype(d);
    }
    /**
     * gpumem_dtype_from_descr(): a record from NumPy's descr notation.
     * @param descr the descr.
     * @return the record dtype.
     */
    static dtype from_descr(const char *descr)
    {
        gpumem_dtype *d = nullptr;
        check("gpumem::dtype::from_descr", gpumem_dtype_from_descr(descr, &d));
        return dtype(d);
    }
    /**
     * gpumem_dtype_record_create().
     * @param fields @p nfields fields.
     * @param nfields the number of fields.
     * @param layout packed or aligned.
     * @param itemsize the size, or 0 to compute it.
     * @return the record dtype.
     */
    static dtype record(const gpumem_field *fields, std::size_t nfields,
                        gpumem_record_layout layout = GPUMEM_RECORD_PACKED, std::size_t itemsize = 0)
    {
        gpumem_dtype *d = nullptr;
        check("gpumem::dtype::record", gpumem_dtype_record_create(fields, nfields, layout, itemsize, &d));
        return dtype(d);
    }
    /**
     * Takes over a reference the caller owns.
     * @param d a dtype reference the caller owns.
     * @return the wrapper, which releases it.
     */
    static dtype adopt(const gpumem_dtype *d) noexcept { return dtype(d); }
    /**
     * Retains a borrowed dtype.
     * @param d a borrowed dtype, or nullptr.
     * @return the wrapper, holding its own reference.
     */
    static dtype share(const gpumem_dtype *d)
    {
        if (d != nullptr)
            check("gpumem::dtype::share", gpumem_dtype_retain(d));
        return dtype(d);
    }
    /** Copies: gpumem_dtype_retain(). @param o the dtype. */
    dtype(const dtype &o) : d_(o.d_)
    {
        if (d_ != nullptr)
            check("gpumem::dtype::dtype", gpumem_dtype_retain(d_));
    }
    /** Moves. @param o the dtype, left empty. */
    dtype(dtype &&o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
    /** Assigns (copy and swap). @param o the dtype. @return *this. */
    dtype &operator=(dtype o) noexcept
    {
        std::swap(d_, o.d_);
        return *this;
    }
    ~dtype() { gpumem_dtype_release(d_); }

    /** The C handle (borrowed). @return the handle, or nullptr. */
    const gpumem_dtype *get() const noexcept { return d_; }
    /** Whether the wrapper holds a dtype. @return true unless empty. */
    explicit operator bool() const noexcept { return d_ != nullptr; }
    /** gpumem_dtype_itemsize(). @return the bytes per element. */
    std::size_t itemsize() const
    {
        std::size_t n = 0;
        check("gpumem::dtype::itemsize", gpumem_dtype_itemsize(d_, &n));
        return n;
    }
    /** gpumem_dtype_alignment(). @return the alignment in bytes. */
    std::size_t alignment() const
    {
        std::size_t n = 0;
        check("gpumem::dtype::alignment", gpumem_dtype_alignment(d_, &n));
        return n;
    }
    /** gpumem_dtype_type(): the type. @return the type. */
    gpumem_type type() const
    {
        gpumem_type t = GPUMEM_VOID;
        check("gpumem::dtype::type", gpumem_dtype_type(d_, &t, nullptr));
        return t;
    }
    /** gpumem_dtype_type(): the byte order. @return the byte order. */
    gpumem_byteorder byteorder() const
    {
        gpumem_byteorder o = GPUMEM_BYTEORDER_NA;
        check("gpumem::dtype::byteorder", gpumem_dtype_type(d_, nullptr, &o));
        return o;
    }
    /** gpumem_dtype_typestr(). @return the typestr, such as "<f4". */
    std::string typestr() const
    {
        char buf[24];
        check("gpumem::dtype::typestr", gpumem_dtype_typestr(d_, buf, sizeof buf));
        return buf;
    }
    /** gpumem_dtype_descr(), in a buffer that grows until it fits. @return the descr. */
    std::string descr() const
    {
        std::vector<char> buf(256);
        for (;;) {
            gpumem_status st = gpumem_dtype_descr(d_, buf.data(), buf.size());
            if (st == GPUMEM_OK)
                return buf.data();
            if (st != GPUMEM_ERROR_INVALID_VALUE || buf.size() >= (std::size_t(1) << 26))
                throw error("gpumem::dtype::descr", st);
            buf.resize(buf.size() * 4);
        }
    }
    /** gpumem_dtype_field_count(). @return the number of fields. */
    std::size_t field_count() const
    {
        std::size_t n = 0;
        check("gpumem::dtype::field_count", gpumem_dtype_field_count(d_, &n));
        return n;
    }
    /** gpumem_dtype_field_index(). @param name the field's name. @return its index. */
    std::size_t field_index(const char *name) const
    {
        std::size_t i = 0;
        check("gpumem::dtype::field_index", gpumem_dtype_field_index(d_, name, &i));
        return i;
    }
    /** gpumem_dtype_equal(). */
    friend bool operator==(const dtype &a, const dtype &b) noexcept { return gpumem_dtype_equal(a.d_, b.d_) == 1; }
    /** Not operator==. @param a a dtype. @param b a dtype. @return whether they differ. */
    friend bool operator!=(const dtype &a, const dtype &b) noexcept { return !(a == b); }

private:
    explicit dtype(const gpumem_dtype *d) noexcept : d_(d) {}
    const gpumem_dtype *d_ = nullptr;
};

/**
 * The builtin dtype of the type of @p x, C++'s GPUMEM_DTYPE_OF (C11's
 * _Generic macro, which C++ lacks): gpumem::dtype_of(host[0][0]) for
 * `float host[4][6]` is the float32 dtype.  @p x is not read; a type with
 * no builtin dtype does not compile.
 * @param x a value of a builtin element type.
 * @return the dtype.
 */
template <class T>
dtype dtype_of(const T &x)
{
    static_cast<void>(x);
    return dtype::of<std::remove_cv_t<T>>();
}

/* ---- streams (non-owning reference) ------------------------------------------------------ */

/** A stream argument that owns nothing: a gpumem::stream, a borrowed C stream, or nullptr (synchronous). */
class stream_ref {
public:
    constexpr stream_ref() noexcept = default;
    /** nullptr: synchronous. */
    constexpr stream_ref(std::nullptr_t) noexcept {}
    /** A borrowed C stream. @param s the stream, or nullptr. */
    explicit constexpr stream_ref(gpumem_stream *s) noexcept : s_(s) {}
    /** A gpumem::stream (borrowed). @param s the stream. */
    stream_ref(const stream &s) noexcept; /* defined after gpumem::stream */
    /** The C handle. @return the stream, or nullptr. */
    gpumem_stream *get() const noexcept { return s_; }
    /** Whether a stream is named. @return true unless synchronous. */
    explicit operator bool() const noexcept { return s_ != nullptr; }
    /** gpumem_stream_synchronize(). */
    void synchronize() const { check("gpumem::stream_ref::synchronize", gpumem_stream_synchronize(s_)); }
    /**
     * gpumem_stream_query(): true when the work is done, false while it runs.
     * @return whether the work is done.
     */
    bool query() const
    {
        gpumem_status st = gpumem_stream_query(s_);
        if (st == GPUMEM_ERROR_NOT_READY)
            return false;
        check("gpumem::stream_ref::query", st);
        return true;
    }

private:
    gpumem_stream *s_ = nullptr;
};

/* ---- contexts ---------------------------------------------------------------------------- */

/** Free and total bytes of a device (gpumem_memory_info). */
struct memory_info {
    /** Free bytes. */
    uint64_t free;
    /** Total bytes. */
    uint64_t total;
};

/** The memory report (struct gpumem_memory_report, gpumem/memory.h; the C name is also a function's). */
using memory_report = struct gpumem_memory_report;
/** One pool's entry of gpumem_memory_pools() (struct gpumem_memory_pool_report). */
using memory_pool_report = struct gpumem_memory_pool_report;

/**
 * A zeroed report with its size field set, for gpumem_memory_report().
 * @return the report.
 */
inline memory_report make_memory_report() noexcept
{
    memory_report r;
    std::memset(&r, 0, sizeof r);
    r.size = sizeof r;
    return r;
}

/** A device's primary context (gpumem/context.h); copy = gpumem_context_retain. Empty: the autoinit context. */
class context {
public:
    context() noexcept = default;
    /** gpumem_context_create(@p device). @param device the device ordinal. @return the context. */
    static context create(int device)
    {
        gpumem_context *c = nullptr;
        check("gpumem::context::create", gpumem_context_create(device, &c));
        return context(c);
    }
    /** pycuda's make_default_context(): gpumem_context_create_default(). @return the context. */
    static context create_default()
    {
        gpumem_context *c = nullptr;
        check("gpumem::context::create_default", gpumem_context_create_default(&c));
        return context(c);
    }
    /** pycuda.autoinit: gpumem_autoinit(), retained, so the wrapper owns a reference. @return the context. */
    static context autoinit()
    {
        gpumem_context *c = nullptr;
        check("gpumem::context::autoinit", gpumem_autoinit(&c));
        return share(c);
    }
    /**
     * Takes over a reference the caller owns.
     * @param c the context.
     * @return the wrapper, which releases it.
     */
    static context adopt(gpumem_context *c) noexcept { return context(c); }
    /** Retains a borrowed context. @param c the context, or nullptr. @return the wrapper. */
    static context share(gpumem_context *c)
    {
        if (c != nullptr)
            check("gpumem::context::share", gpumem_context_retain(c));
        return context(c);
    }
    /** Copies: gpumem_context_retain(). @param o the context. */
    context(const context &o) : c_(o.c_)
    {
        if (c_ != nullptr)
            check("gpumem::context::context", gpumem_context_retain(c_));
    }
    /** Moves. @param o the context, left empty. */
    context(context &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    /** Assigns (copy and swap). @param o the context. @return *this. */
    context &operator=(context o) noexcept
    {
        std::swap(c_, o.c_);
        return *this;
    }
    ~context() { gpumem_context_release(c_); }

    /** The C handle (borrowed; nullptr: the autoinit context). @return the handle. */
    gpumem_context *get() const noexcept { return c_; }
    /** Whether the wrapper holds a context. @return true unless empty. */
    explicit operator bool() const noexcept { return c_ != nullptr; }
    /** Gives up the reference without releasing it (the caller releases it). @return the handle. */
    gpumem_context *detach() noexcept { return std::exchange(c_, nullptr); }

    /** gpumem_context_get_device(). @return the device ordinal. */
    int device() const
    {
        int d = -1;
        check("gpumem::context::device", gpumem_context_get_device(c_, &d));
        return d;
    }
    /** gpumem_context_selection(). @return the rule that chose the device. */
    gpumem_selection selection() const
    {
        gpumem_selection s = GPUMEM_SELECTION_EXPLICIT;
        check("gpumem::context::selection", gpumem_context_selection(c_, &s));
        return s;
    }
    /** gpumem_context_refcount(). @return the references. */
    int refcount() const
    {
        int n = 0;
        check("gpumem::context::refcount", gpumem_context_refcount(c_, &n));
        return n;
    }
    /** gpumem_memory_info(). @return free and total bytes. */
    gpumem::memory_info memory_info() const
    {
        gpumem::memory_info m{0, 0};
        check("gpumem::context::memory_info", gpumem_memory_info(c_, &m.free, &m.total));
        return m;
    }
    /** gpumem_context_synchronize(). */
    void synchronize() const { check("gpumem::context::synchronize", gpumem_context_synchronize(c_)); }
    /** The context's default stream (borrowed: valid while the context lives). @return the default stream. */
    stream_ref default_stream() const
    {
        gpumem_stream *s = nullptr;
        check("gpumem::context::default_stream", gpumem_stream_default(c_, &s));
        return stream_ref(s);
    }
    /** gpumem_context_flush_deallocations(). */
    void flush_deallocations() const { check("gpumem::context::flush_deallocations", gpumem_context_flush_deallocations(c_)); }
    /**
     * gpumem_context_set_dealloc_limits().
     * @param max_count the most queued frees.
     * @param max_ratio the most queued bytes, as a fraction of the device's memory.
     */
    void set_dealloc_limits(std::size_t max_count, double max_ratio) const
    {
        check("gpumem::context::set_dealloc_limits", gpumem_context_set_dealloc_limits(c_, max_count, max_ratio));
    }
    /**
     * gpumem_context_set_pool(): arrays of this context allocate from @p p (nullptr: the driver again).
     * @param p the pool, or nullptr.
     */
    void set_pool(const pool *p) const; /* defined after gpumem::pool */
    /**
     * gpumem_memory_report(): where the memory of this context, or of its device, is (gpumem/memory.h).
     * @param flags 0, or GPUMEM_MEMORY_DEVICE_INFO and GPUMEM_MEMORY_WHOLE_DEVICE or'ed.
     * @return the report.
     */
    gpumem::memory_report memory_report(unsigned flags = 0) const
    {
        gpumem::memory_report r = make_memory_report();
        check("gpumem::context::memory_report", gpumem_memory_report(c_, flags, &r));
        return r;
    }
    /**
     * gpumem_memory_reset_peaks(): the peaks start again from what is live.
     * @param flags 0 or GPUMEM_MEMORY_WHOLE_DEVICE.
     */
    void reset_memory_peaks(unsigned flags = 0) const
    {
        check("gpumem::context::reset_memory_peaks", gpumem_memory_reset_peaks(c_, flags));
    }
    /**
     * gpumem_memory_pools(): every pool of this context (or of its device), with what it holds.
     * @param flags 0 or GPUMEM_MEMORY_WHOLE_DEVICE.
     * @return one entry per pool.
     */
    std::vector<memory_pool_report> memory_pools(unsigned flags = 0) const
    {
        for (;;) {
            std::size_t n = 0;
            check("gpumem::context::memory_pools", gpumem_memory_pools(c_, flags, nullptr, 0, &n));
            memory_pool_report blank;
            std::memset(&blank, 0, sizeof blank);
            blank.size = sizeof blank;
            std::vector<memory_pool_report> v(n + 1, blank); /* room for one made meanwhile */
            std::size_t got = 0;
            check("gpumem::context::memory_pools", gpumem_memory_pools(c_, flags, v.data(), v.size(), &got));
            if (got <= v.size()) {
                v.resize(got);
                return v;
            }
        }
    }
    /**
     * gpumem_context_set_oom_callback(): runs before an allocation fails for lack of memory.
     * @param callback the callback (nullptr removes it).
     * @param user passed to it.
     */
    void set_oom_callback(gpumem_oom_callback callback, void *user = nullptr) const
    {
        check("gpumem::context::set_oom_callback", gpumem_context_set_oom_callback(c_, callback, user));
    }

private:
    explicit context(gpumem_context *c) noexcept : c_(c) {}
    gpumem_context *c_ = nullptr;
};

/* ---- events ------------------------------------------------------------------------------ */

/**
 * numba's cuda.event(): an event of a context (gpumem/event.h; move-only, the destructor is
 * gpumem_event_destroy).  An empty stream_ref given to record() or wait() is the default stream of the
 * event's context.
 */
class event {
public:
    event() noexcept = default;
    /**
     * gpumem_event_create(@p ctx, @p flags).
     * @param ctx the context (empty: the autoinit context).
     * @param flags 0 (with timing), or GPUMEM_EVENT_DISABLE_TIMING and GPUMEM_EVENT_BLOCKING_SYNC or'ed.
     */
    explicit event(const context &ctx, unsigned flags = 0)
    {
        check("gpumem::event::event", gpumem_event_create(ctx.get(), flags, &e_));
    }
    /** Moves. @param o the event, left empty. */
    event(event &&o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    /** Move-assigns, destroying the event held before. @param o the event, left empty. @return *this. */
    event &operator=(event &&o) noexcept
    {
        if (this != &o) {
            gpumem_event_destroy(e_);
            e_ = std::exchange(o.e_, nullptr);
        }
        return *this;
    }
    event(const event &) = delete;
    event &operator=(const event &) = delete;
    ~event() { gpumem_event_destroy(e_); }

    /** The C handle (borrowed). @return the event. */
    gpumem_event *get() const noexcept { return e_; }
    /** Whether the wrapper holds an event. @return true unless empty or destroyed. */
    explicit operator bool() const noexcept { return e_ != nullptr; }
    /** gpumem_event_destroy(): ends the event now; throws its status. */
    void destroy() { check("gpumem::event::destroy", gpumem_event_destroy(std::exchange(e_, nullptr))); }
    /**
     * numba's event.record(stream): gpumem_event_record(), behind the work queued on @p s so far.
     * @param s a stream of the event's context (empty: that context's default stream).
     */
    void record(stream_ref s = {}) const { check("gpumem::event::record", gpumem_event_record(e_, s.get())); }
    /**
     * numba's event.wait(stream): gpumem_stream_wait_event(@p s, this event); the same as s.wait(*this).
     * @param s the stream whose later work waits (empty: the default stream of the event's context).
     */
    void wait(stream_ref s = {}) const { check("gpumem::event::wait", gpumem_stream_wait_event(s.get(), e_)); }
    /** gpumem_event_query(): true when complete (or never recorded), false while its work runs. @return whether it is complete. */
    bool query() const
    {
        gpumem_status st = gpumem_event_query(e_);
        if (st == GPUMEM_ERROR_NOT_READY)
            return false;
        check("gpumem::event::query", st);
        return true;
    }
    /** gpumem_event_synchronize(): waits until the event has completed. */
    void synchronize() const { check("gpumem::event::synchronize", gpumem_event_synchronize(e_)); }
    /**
     * numba's event_elapsed_time(*this, @p end): gpumem_event_elapsed_time(), the milliseconds from this
     * event's completion to that of @p end; both recorded, completed and with timing.
     * @param end the later event.
     * @return the elapsed time in milliseconds.
     */
    float elapsed_ms(const event &end) const
    {
        float ms = 0;
        check("gpumem::event::elapsed_ms", gpumem_event_elapsed_time(e_, end.e_, &ms));
        return ms;
    }
    /** The event's context, retained. @return the context. */
    gpumem::context context() const
    {
        gpumem_context *c = nullptr;
        check("gpumem::event::context", gpumem_event_context(e_, &c));
        return gpumem::context::share(c);
    }

private:
    gpumem_event *e_ = nullptr;
};

/* ---- streams ----------------------------------------------------------------------------- */

/** numba's cuda.stream(): a stream of a context (move-only; the destructor is gpumem_stream_destroy). */
class stream {
public:
    stream() noexcept = default;
    /**
     * gpumem_stream_create(@p ctx, @p flags).
     * @param ctx the context (empty: the autoinit context).
     * @param flags 0 or GPUMEM_STREAM_NON_BLOCKING.
     */
    explicit stream(const context &ctx, unsigned flags = 0) { check("gpumem::stream::stream", gpumem_stream_create(ctx.get(), flags, &s_)); }
    /** Moves. @param o the stream, left empty. */
    stream(stream &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    /** Move-assigns, destroying the stream held before. @param o the stream, left empty. @return *this. */
    stream &operator=(stream &&o) noexcept
    {
        if (this != &o) {
            gpumem_stream_destroy(s_);
            s_ = std::exchange(o.s_, nullptr);
        }
        return *this;
    }
    stream(const stream &) = delete;
    stream &operator=(const stream &) = delete;
    ~stream() { gpumem_stream_destroy(s_); }

    /** The C handle (borrowed). @return the stream. */
    gpumem_stream *get() const noexcept { return s_; }
    /** Whether the wrapper holds a stream. @return true unless empty or destroyed. */
    explicit operator bool() const noexcept { return s_ != nullptr; }
    /** gpumem_stream_destroy(): synchronizes (committing write-backs), then ends the stream; throws its status. */
    void destroy() { check("gpumem::stream::destroy", gpumem_stream_destroy(std::exchange(s_, nullptr))); }
    /** gpumem_stream_synchronize(). */
    void synchronize() const { check("gpumem::stream::synchronize", gpumem_stream_synchronize(s_)); }
    /** gpumem_stream_query(). @return whether the work is done. */
    bool query() const
    {
        gpumem_status st = gpumem_stream_query(s_);
        if (st == GPUMEM_ERROR_NOT_READY)
            return false;
        check("gpumem::stream::query", st);
        return true;
    }
    /**
     * gpumem_stream_wait_event(): this stream's work queued from now on waits until @p e has completed.
     * An empty stream throws GPUMEM_ERROR_NULL_ARGUMENT (in C, NULL would be the default stream).
     * @param e the event (of any context).
     */
    void wait(const event &e) const
    {
        if (s_ == nullptr)
            throw error("gpumem::stream::wait", GPUMEM_ERROR_NULL_ARGUMENT,
                        "the stream is empty (moved from or destroyed)");
        check("gpumem::stream::wait", gpumem_stream_wait_event(s_, e.get()));
    }
    /** The stream's context, retained. @return the context. */
    gpumem::context context() const
    {
        gpumem_context *c = nullptr;
        check("gpumem::stream::context", gpumem_stream_context(s_, &c));
        return gpumem::context::share(c);
    }

private:
    gpumem_stream *s_ = nullptr;
};

inline stream_ref::stream_ref(const stream &s) noexcept : s_(s.get()) {}

/**
 * numba's `with stream.auto_synchronize():` as a scope guard: the
 * constructor begins it, end() or the destructor ends it (the outermost end
 * synchronizes the stream).
 */
class auto_synchronize {
public:
    /** gpumem_stream_auto_synchronize_begin(@p s). @param s the stream. */
    explicit auto_synchronize(stream_ref s) : s_(s.get()) { check("gpumem::auto_synchronize::auto_synchronize", gpumem_stream_auto_synchronize_begin(s_)); }
    /** Moves: the new guard ends the scope, @p o ends nothing. @param o the guard. */
    auto_synchronize(auto_synchronize &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    auto_synchronize(const auto_synchronize &) = delete;
    auto_synchronize &operator=(const auto_synchronize &) = delete;
    ~auto_synchronize()
    {
        if (s_ != nullptr)
            gpumem_stream_auto_synchronize_end(s_);
    }
    /**
     * Ends the scope now and throws the synchronization's status (the destructor then does nothing).
     * A guard that has ended, or was moved from, throws GPUMEM_ERROR_INVALID_STATE and ends nothing.
     */
    void end()
    {
        if (s_ == nullptr)
            throw error("gpumem::auto_synchronize::end", GPUMEM_ERROR_INVALID_STATE,
                        "the scope has ended already (or the guard was moved from)");
        check("gpumem::auto_synchronize::end", gpumem_stream_auto_synchronize_end(std::exchange(s_, nullptr)));
    }

private:
    gpumem_stream *s_;
};

/** numba's `with defer_cleanup():` as a scope guard (gpumem_defer_cleanup_begin / _end). */
class defer_cleanup {
public:
    /** gpumem_defer_cleanup_begin(@p ctx). @param ctx the context (empty: the autoinit context). */
    explicit defer_cleanup(const context &ctx) : c_(ctx) { check("gpumem::defer_cleanup::defer_cleanup", gpumem_defer_cleanup_begin(c_.get())); }
    /** Moves: the new guard ends the scope, @p o ends nothing. @param o the guard. */
    defer_cleanup(defer_cleanup &&o) noexcept : c_(std::move(o.c_)), ended_(std::exchange(o.ended_, true)) {}
    defer_cleanup(const defer_cleanup &) = delete;
    defer_cleanup &operator=(const defer_cleanup &) = delete;
    ~defer_cleanup()
    {
        if (!ended_)
            gpumem_defer_cleanup_end(c_.get());
    }
    /**
     * gpumem_defer_cleanup_end() now, with its status (the destructor then does nothing).  A guard that
     * has ended, or was moved from, throws GPUMEM_ERROR_INVALID_STATE and ends nothing.
     */
    void end()
    {
        if (ended_)
            throw error("gpumem::defer_cleanup::end", GPUMEM_ERROR_INVALID_STATE,
                        "the scope has ended already (or the guard was moved from)");
        ended_ = true;
        check("gpumem::defer_cleanup::end", gpumem_defer_cleanup_end(c_.get()));
    }

private:
    context c_;
    bool ended_ = false;
};

/* ---- the memory trace (gpumem/trace.h) --------------------------------------------------- */

/** gpumem_trace_start(): records a trace into @p path. @param path the file. @param flags 0 or
 * GPUMEM_TRACE_CALL_SITES. */
inline void trace_start(const std::string &path, unsigned flags = 0)
{
    check("gpumem::trace_start", gpumem_trace_start(path.c_str(), flags));
}

/** gpumem_trace_stop(): ends the trace that records, and writes the rest of it. */
inline void trace_stop() { check("gpumem::trace_stop", gpumem_trace_stop()); }

/** gpumem_trace_mark(): a marker on the calling thread's timeline ("time step 12"). @param name its text. */
inline void trace_mark(const std::string &name) { check("gpumem::trace_mark", gpumem_trace_mark(name.c_str())); }

/**
 * A named region of the calling thread's timeline as a scope guard: the
 * constructor opens it (gpumem_trace_push), the destructor closes it
 * (gpumem_trace_pop).  Regions nest; the events are recorded only while a
 * trace records, and cost one load otherwise.
 * @code
 * {
 *     gpumem::trace_region r("solver");
 *     ... // allocations and copies here are drawn inside "solver"
 * }
 * @endcode
 */
class trace_region {
public:
    /** Opens the region. @param name its name. */
    explicit trace_region(const std::string &name)
    {
        check("gpumem::trace_region::trace_region", gpumem_trace_push(name.c_str()));
    }
    trace_region(const trace_region &) = delete;
    trace_region &operator=(const trace_region &) = delete;
    ~trace_region() { gpumem_trace_pop(); }
};

/* ---- arrays ------------------------------------------------------------------------------ */

namespace detail {
/**
 * Throws GPUMEM_ERROR_INVALID_STATE for an empty gpumem::array used where an
 * array is needed: its C handle is NULL, which C would call a NULL argument,
 * but in C++ the wrapper was released (release(), detach()) or moved from
 * (or never held an array).
 * @param member the C++ member or function called.
 * @param which "" for the array the member was called on, else the parameter's name ("src", "views[2]").
 */
[[noreturn]] inline void throw_released(const char *member, const std::string &which)
{
    throw error(member, GPUMEM_ERROR_INVALID_STATE,
                (which.empty() ? std::string("the array") : "'" + which + "'") +
                    " was released: it is an empty gpumem::array (release(), detach() and a move empty one, "
                    "as does default construction)");
}
} // namespace detail


/** An N-dimensional array (gpumem/array.h); copy = gpumem_array_retain.  A view keeps its base alive. */
class array {
public:
    array() noexcept = default;
    /** Takes over a reference the caller owns. @param a the array. @return the wrapper, which releases it. */
    static array adopt(gpumem_array *a) noexcept { return array(a); }
    /** Retains a borrowed array. @param a the array, or nullptr. @return the wrapper. */
    static array share(gpumem_array *a)
    {
        if (a != nullptr)
            check("gpumem::array::share", gpumem_array_retain(a));
        return array(a);
    }
    /** Copies: gpumem_array_retain(). @param o the array. */
    array(const array &o) : a_(o.a_)
    {
        if (a_ != nullptr)
            check("gpumem::array::array", gpumem_array_retain(use("gpumem::array::array")));
    }
    /** Moves. @param o the array, left empty. */
    array(array &&o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
    /** Assigns (copy and swap). @param o the array. @return *this. */
    array &operator=(array o) noexcept
    {
        std::swap(a_, o.a_);
        return *this;
    }
    ~array() { gpumem_array_release(a_); }

    /** The C handle (borrowed). @return the handle, or nullptr. */
    gpumem_array *get() const noexcept { return a_; }
    /** Whether the wrapper holds an array. @return true unless empty. */
    explicit operator bool() const noexcept { return a_ != nullptr; }
    /** Gives up the reference without releasing it. @return the handle, for the caller to release. */
    gpumem_array *detach() noexcept { return std::exchange(a_, nullptr); }
    /** gpumem_array_release() now, throwing the driver's failure to free (the handle is gone either way). */
    void release() { check("gpumem::array::release", gpumem_array_release(std::exchange(a_, nullptr))); }

    /* properties */
    /** gpumem_array_ndim(). @return the number of dimensions. */
    int ndim() const { return ndim_for("gpumem::array::ndim"); }
    /** gpumem_array_shape(). @return the extents. */
    dims shape() const
    {
        dims d;
        d.resize(ndim_for("gpumem::array::shape"));
        check("gpumem::array::shape", gpumem_array_shape(use("gpumem::array::shape"), d.data()));
        return d;
    }
    /** Byte strides. @return the strides. */
    dims strides() const
    {
        dims d;
        d.resize(ndim_for("gpumem::array::strides"));
        check("gpumem::array::strides", gpumem_array_strides(use("gpumem::array::strides"), d.data()));
        return d;
    }
    /** gpumem_array_dtype(). @return the dtype, retained. */
    gpumem::dtype dtype() const { return dtype_for("gpumem::array::dtype"); }
    /** gpumem_array_size(). @return the number of elements. */
    int64_t size() const
    {
        int64_t n = 0;
        check("gpumem::array::size", gpumem_array_size(use("gpumem::array::size"), &n));
        return n;
    }
    /** gpumem_array_nbytes(). @return the bytes of the elements. */
    int64_t nbytes() const
    {
        int64_t n = 0;
        check("gpumem::array::nbytes", gpumem_array_nbytes(use("gpumem::array::nbytes"), &n));
        return n;
    }
    /** gpumem_array_kind(). @return the memory kind. */
    gpumem_memory_kind kind() const
    {
        gpumem_memory_kind k = GPUMEM_MEMORY_HOST;
        check("gpumem::array::kind", gpumem_array_kind(use("gpumem::array::kind"), &k));
        return k;
    }
    /** The array's context, retained (empty for host arrays). @return the context. */
    gpumem::context context() const
    {
        gpumem_context *c = nullptr;
        check("gpumem::array::context", gpumem_array_context(use("gpumem::array::context"), &c));
        return gpumem::context::share(c);
    }
    /** gpumem_array_device_pointer(). @return the device address of element [0, ...]. */
    uint64_t device_pointer() const
    {
        uint64_t p = 0;
        check("gpumem::array::device_pointer", gpumem_array_device_pointer(use("gpumem::array::device_pointer"), &p));
        return p;
    }
    /** gpumem_array_host_pointer(). @return the host address of element [0, ...]. */
    void *host_pointer() const
    {
        void *p = nullptr;
        check("gpumem::array::host_pointer", gpumem_array_host_pointer(use("gpumem::array::host_pointer"), &p));
        return p;
    }
    /** gpumem_array_is_c_contiguous(). @return the flag. */
    bool is_c_contiguous() const
    {
        int r = 0;
        const char *member = "gpumem::array::is_c_contiguous";
        check(member, gpumem_array_is_c_contiguous(use(member), &r));
        return r != 0;
    }
    /** gpumem_array_is_f_contiguous(). @return the flag. */
    bool is_f_contiguous() const
    {
        int r = 0;
        const char *member = "gpumem::array::is_f_contiguous";
        check(member, gpumem_array_is_f_contiguous(use(member), &r));
        return r != 0;
    }
    /** gpumem_array_is_readonly(). @return the flag. */
    bool is_readonly() const
    {
        int r = 0;
        check("gpumem::array::is_readonly", gpumem_array_is_readonly(use("gpumem::array::is_readonly"), &r));
        return r != 0;
    }
    /** gpumem_array_set_readonly(). @param readonly true: read-only; false: writable. */
    void set_readonly(bool readonly) const
    {
        const char *member = "gpumem::array::set_readonly";
        check(member, gpumem_array_set_readonly(use(member), readonly ? 1 : 0));
    }

    /**
     * The elements of a contiguous host-side array (host, pinned, mapped,
     * managed; C or F order) as a span of @p T, whose size must be the item
     * size.  The span is valid while the array lives.
     * @return the elements.
     */
    template <class T>
    span<T> host_span() const
    {
        const char *member = "gpumem::array::host_span";
        std::size_t itemsize = item_size_for(member);
        if (itemsize != sizeof(T))
            throw error(member, GPUMEM_ERROR_DTYPE_MISMATCH,
                        "the item size is " + std::to_string(itemsize) + " bytes, the span's type " +
                            std::to_string(sizeof(T)));
        int c = 0, f = 0;
        check(member, gpumem_array_is_c_contiguous(use(member), &c));
        check(member, gpumem_array_is_f_contiguous(use(member), &f));
        if (c == 0 && f == 0)
            throw error(member, GPUMEM_ERROR_COPY_REQUIRED, "the array is not contiguous");
        void *p = nullptr;
        int64_t n = 0;
        check(member, gpumem_array_host_pointer(use(member), &p));
        check(member, gpumem_array_size(use(member), &n));
        return span<T>(static_cast<T *>(p), static_cast<std::size_t>(n));
    }

    /* copies: each member is named by its direction, so that its arguments cannot be swapped */
    /**
     * dst[:] = *this: copies this array into @p dst, gpumem_array_copy(@p dst, *this, @p s); any
     * kinds, any strides.
     * @param dst the destination, of the same shape and dtype.
     * @param s the stream (empty: synchronous).
     */
    void copy_to(const array &dst, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::copy_to";
        check(member, gpumem_array_copy(dst.use(member, "dst"), use(member), s.get()));
    }
    /**
     * *this[:] = @p src: copies @p src into this array, gpumem_array_copy(*this, @p src, @p s); any
     * kinds, any strides.
     * @param src the source, of the same shape and dtype.
     * @param s the stream (empty: synchronous).
     */
    void copy_from(const array &src, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::copy_from";
        check(member, gpumem_array_copy(use(member), src.use(member, "src"), s.get()));
    }
    /**
     * numba's d.copy_to_host(ary, stream): copies this array into the host-side array @p dst,
     * gpumem_copy_to_host(*this, @p dst, @p s).  A device @p dst throws GPUMEM_ERROR_INVALID_VALUE.
     * @param dst a host-side array (host, pinned, mapped, managed).
     * @param s the stream (empty: synchronous).
     */
    void copy_to_host(const array &dst, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::copy_to_host";
        check(member, gpumem_copy_to_host(use(member), dst.use(member, "dst"), s.get()));
    }
    /**
     * numba's d.copy_to_device(ary, stream) under a name that says its direction: copies the
     * host-side array @p src into this device array, gpumem_copy_to_device(*this, @p src, @p s).
     * A @p src on the device, or a host-side *this, throws GPUMEM_ERROR_INVALID_VALUE (copy_from()
     * copies between any two).
     * @param src a host-side array.
     * @param s the stream (empty: synchronous).
     */
    void copy_from_host(const array &src, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::copy_from_host";
        gpumem_memory_kind k = GPUMEM_MEMORY_HOST;
        check(member, gpumem_array_kind(src.use(member, "src"), &k));
        if (k == GPUMEM_MEMORY_DEVICE || k == GPUMEM_MEMORY_FOREIGN)
            throw error(member, GPUMEM_ERROR_INVALID_VALUE,
                        std::string("'src' is a ") + gpumem_memory_kind_name(k) +
                            " array, not a host-side one (copy_from copies between any two)");
        check(member, gpumem_copy_to_device(use(member), src.use(member, "src"), s.get()));
    }
    /**
     * Deprecated: `d.copy_to_device(x)` copies @p src into *this, which reads as the opposite;
     * use copy_from_host(@p src) (or copy_from(@p src)), which does the same.
     * gpumem_copy_to_device(*this, @p src, @p s).
     * @param src the source.
     * @param s the stream (empty: synchronous).
     */
    [[deprecated("d.copy_to_device(src) copies src INTO d: use d.copy_from_host(src) or d.copy_from(src)")]]
    void copy_to_device(const array &src, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::copy_to_device";
        check(member, gpumem_copy_to_device(use(member), src.use(member, "src"), s.get()));
    }
    /**
     * gpumem_array_fill() with one element of type @p T (its size must be the item size).
     * @param value the element.
     * @param s the stream (empty: synchronous).
     */
    template <class T>
    void fill(const T &value, stream_ref s = {}) const
    {
        check_item<T>("gpumem::array::fill");
        check("gpumem::array::fill", gpumem_array_fill(use("gpumem::array::fill"), &value, s.get()));
    }
    /**
     * gpumem_array_get_item_n(): the element at @p index, one index per
     * dimension (negative from the end); another count of indices is
     * GPUMEM_ERROR_INVALID_VALUE (`get<T>({0})` of a 2-D array throws).
     * @param index ndim indices.
     * @param s the stream, or empty.
     * @return the element.
     */
    template <class T>
    T get(const dims &index, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::get";
        check_item<T>(member);
        T v{};
        check(member, gpumem_array_get_item_n(use(member), index.size(), index.data(), &v, s.get()));
        return v;
    }
    /**
     * gpumem_array_set_item_n(): writes @p value at @p index, one index per
     * dimension; another count of indices is GPUMEM_ERROR_INVALID_VALUE and
     * writes nothing.
     * @param index ndim indices.
     * @param value the element.
     * @param s the stream (empty: synchronous).
     */
    template <class T>
    void set(const dims &index, const T &value, stream_ref s = {}) const
    {
        const char *member = "gpumem::array::set";
        check_item<T>(member);
        check(member, gpumem_array_set_item_n(use(member), index.size(), index.data(), &value, s.get()));
    }

    /* views */
    /**
     * gpumem_array_slice(): per leading axis {start, stop, step}, {start, stop} (step 1),
     * gpumem::all for `:` or gpumem::index(i) for the integer index i, which drops its axis:
     * `d.slice({gpumem::index(1), {1, -1}})` is NumPy's `d[1, 1:-1]`.
     * @param slices the slices.
     * @return the view.
     */
    array slice(std::initializer_list<slice_spec> slices) const { return slice_range(slices.begin(), slices.end()); }
    /**
     * The same from a range of slices built at run time: a std::vector (or
     * std::array) of gpumem_slice or gpumem::slice_spec.
     * @param slices the slices, one per leading axis.
     * @return the view.
     */
    template <class Range, class = decltype(std::begin(std::declval<const Range &>())),
              class = std::enable_if_t<std::is_convertible_v<decltype(*std::begin(std::declval<const Range &>())),
                                                             slice_spec>>>
    array slice(const Range &slices) const
    {
        return slice_range(std::begin(slices), std::end(slices));
    }
    /**
     * The same from @p n C slices at @p slices (gpumem_array_slice()'s own arguments).
     * @param slices the slices (may be nullptr when @p n is 0).
     * @param n their number.
     * @return the view.
     */
    array slice(const gpumem_slice *slices, std::size_t n) const
    {
        if (slices == nullptr && n != 0)
            throw error("gpumem::array::slice", GPUMEM_ERROR_NULL_ARGUMENT, "'slices' is NULL with a count of " +
                                                                                std::to_string(n));
        return slice_range(slices, slices + n);
    }
    /**
     * The same with the slices as arguments: `d.slice(gpumem::index(1), gpumem::all)`.
     * @param first the first axis' slice.
     * @param rest the next axes' slices.
     * @return the view.
     */
    template <class... S, class = std::enable_if_t<(std::is_convertible_v<S, slice_spec> && ...)>>
    array slice(const slice_spec &first, const S &...rest) const
    {
        const slice_spec all[] = {first, slice_spec(rest)...};
        return slice_range(std::begin(all), std::end(all));
    }
    /** NumPy's .T: the axes reversed. @return the view. */
    array transpose() const
    {
        gpumem_array *v = nullptr;
        check("gpumem::array::transpose", gpumem_array_transpose(use("gpumem::array::transpose"), nullptr, &v));
        return array(v);
    }
    /**
     * gpumem_array_transpose(): axis i of the view is axis @p axes[i].
     * @param axes a permutation of the axes.
     * @return the view.
     */
    array transpose(std::initializer_list<int> axes) const
    {
        const int n = ndim_for("gpumem::array::transpose");
        if (static_cast<int>(axes.size()) != n)
            throw error("gpumem::array::transpose", GPUMEM_ERROR_INVALID_VALUE,
                        std::to_string(axes.size()) + " axes for an array of " + std::to_string(n));
        gpumem_array *v = nullptr;
        check("gpumem::array::transpose", gpumem_array_transpose(use("gpumem::array::transpose"), axes.begin(), &v));
        return array(v);
    }
    /** NumPy's view(dtype). @param d the new dtype. @return the view. */
    array view(const gpumem::dtype &d) const
    {
        gpumem_array *v = nullptr;
        check("gpumem::array::view", gpumem_array_view(use("gpumem::array::view"), d.get(), &v));
        return array(v);
    }
    /**
     * numba's reshape: a view when one exists, else a copy (unless @p flags has GPUMEM_NO_COPY).
     * @param shape the new extents, at most one -1.
     * @param order 'C', 'F' or 'A'.
     * @param flags 0 or GPUMEM_NO_COPY.
     * @param s the stream of a copy, or empty.
     * @return the view or copy.
     */
    array reshape(const dims &shape, char order = 'C', unsigned flags = 0, stream_ref s = {}) const
    {
        gpumem_array *v = nullptr;
        const char *member = "gpumem::array::reshape";
        check(member, gpumem_array_reshape(use(member), shape.size(), shape.data(), order, flags, s.get(), &v));
        return array(v);
    }
    /**
     * numba's ravel: reshape to one dimension.
     * @param order 'C', 'F' or 'A'.
     * @param flags 0 or GPUMEM_NO_COPY.
     * @param s the stream of a copy, or empty.
     * @return the view or copy.
     */
    array ravel(char order = 'C', unsigned flags = 0, stream_ref s = {}) const
    {
        gpumem_array *v = nullptr;
        check("gpumem::array::ravel", gpumem_array_ravel(use("gpumem::array::ravel"), order, flags, s.get(), &v));
        return array(v);
    }
    /**
     * numba's split(section): the views of a 1-D array, in order.
     * @param section the elements per piece.
     * @return the views.
     */
    std::vector<array> split(int64_t section) const
    {
        const char *member = "gpumem::array::split";
        std::size_t count = 0; /* first ask for the count: capacity 0 fails with it set */
        gpumem_status st = gpumem_array_split(use(member), section, nullptr, 0, &count);
        if (st != GPUMEM_OK && (st != GPUMEM_ERROR_INVALID_VALUE || count == 0))
            throw error(member, st);
        std::vector<gpumem_array *> raw(count);
        check(member, gpumem_array_split(use(member), section, raw.data(), raw.size(), &count));
        std::vector<array> pieces;
        pieces.reserve(count);
        for (std::size_t i = 0; i < count; i++)
            pieces.push_back(array(raw[i]));
        return pieces;
    }

    /* interop */
    /**
     * gpumem_array_interface(): the `__cuda_array_interface__` (a record's descr is not written).
     * @param s the stream the data is ready on, or empty.
     * @return the description.
     */
    gpumem_cuda_array_interface cuda_array_interface(stream_ref s = {}) const
    {
        gpumem_cuda_array_interface d;
        std::memset(&d, 0, sizeof d);
        d.size = sizeof d;
        const char *member = "gpumem::array::cuda_array_interface";
        check(member, gpumem_array_interface(use(member), s.get(), &d));
        return d;
    }
    /**
     * gpumem_array_to_dlpack(): a DLManagedTensor (or, with GPUMEM_DLPACK_VERSIONED, a DLManagedTensorVersioned).
     * @param flags 0, GPUMEM_DLPACK_VERSIONED, GPUMEM_DLPACK_READ_ONLY.
     * @return the tensor.
     */
    void *to_dlpack(unsigned flags = 0) const
    {
        void *t = nullptr;
        check("gpumem::array::to_dlpack", gpumem_array_to_dlpack(use("gpumem::array::to_dlpack"), flags, &t));
        return t;
    }
    /** gpumem_ipc_get_handle(). @return the handle. */
    gpumem_ipc_handle ipc_handle() const
    {
        gpumem_ipc_handle h;
        check("gpumem::array::ipc_handle", gpumem_ipc_get_handle(use("gpumem::array::ipc_handle"), &h));
        return h;
    }

    /**
     * The C handle, for a call that member @p member makes; an empty wrapper throws
     * GPUMEM_ERROR_INVALID_STATE, saying the array was released (or moved from).
     * @param member the C++ member or function called.
     * @param which "" for the array the member was called on, else the parameter's name.
     * @return the handle, never nullptr.
     */
    gpumem_array *use(const char *member, const std::string &which = std::string()) const
    {
        if (a_ == nullptr)
            detail::throw_released(member, which);
        return a_;
    }

private:
    explicit array(gpumem_array *a) noexcept : a_(a) {}
    template <class It>
    array slice_range(It first, It last) const
    {
        const char *member = "gpumem::array::slice";
        const auto count = std::distance(first, last);
        if (count > GPUMEM_MAX_NDIM)
            throw error(member, GPUMEM_ERROR_INVALID_VALUE,
                        std::to_string(count) + " slices, more than GPUMEM_MAX_NDIM (32)");
        gpumem_slice c[GPUMEM_MAX_NDIM];
        std::size_t n = 0;
        for (; first != last; ++first)
            c[n++] = slice_spec(*first).get();
        gpumem_array *v = nullptr;
        check(member, gpumem_array_slice(use(member), c, static_cast<int>(n), &v));
        return array(v);
    }
    template <class T>
    void check_item(const char *member) const
    {
        static_assert(std::is_trivially_copyable_v<T>, "elements are copied as bytes");
        std::size_t itemsize = item_size_for(member);
        if (itemsize != sizeof(T))
            throw error(member, GPUMEM_ERROR_DTYPE_MISMATCH,
                        "the item size is " + std::to_string(itemsize) + " bytes, the value's " +
                            std::to_string(sizeof(T)));
    }
    /* The C calls behind ndim(), dtype() and dtype().itemsize(), failing as @p member: what() names the
     * member the caller called. */
    int ndim_for(const char *member) const
    {
        int n = 0;
        check(member, gpumem_array_ndim(use(member), &n));
        return n;
    }
    gpumem::dtype dtype_for(const char *member) const
    {
        const gpumem_dtype *d = nullptr;
        check(member, gpumem_array_dtype(use(member), &d));
        return gpumem::dtype::share(d);
    }
    std::size_t item_size_for(const char *member) const
    {
        const gpumem_dtype *d = nullptr;
        std::size_t n = 0;
        check(member, gpumem_array_dtype(use(member), &d));
        check(member, gpumem_dtype_itemsize(d, &n));
        return n;
    }
    gpumem_array *a_ = nullptr;
};

/* ---- making arrays ------------------------------------------------------------------------ */

/**
 * gpumem_host_array_wrap(): a caller's buffer (borrowed) as a host array; @p strides in bytes, empty: C order.
 * @param data the buffer.
 * @param shape the extents.
 * @param d the element type.
 * @param strides byte strides, or empty.
 * @return the host array.
 */
inline array wrap(void *data, const dims &shape, const dtype &d, const dims &strides = {})
{
    gpumem_array *a = nullptr;
    check("gpumem::wrap", gpumem_host_array_wrap(data, shape.size(), shape.data(), strides.empty() ? nullptr : strides.data(),
                                 d.get(), &a));
    return array::adopt(a);
}
/**
 * The same for elements of a builtin type: wrap(&host[0][0], {4, 6}).
 * @param data the first element.
 * @param shape the extents.
 * @param strides byte strides, or empty.
 * @return the host array.
 */
template <class T>
array wrap(T *data, const dims &shape, const dims &strides = {})
{
    return wrap(static_cast<void *>(data), shape, dtype::of<std::remove_cv_t<T>>(), strides);
}
/**
 * A contiguous range (std::vector, std::array, gpumem::span, ...) as a 1-D host array over its memory.
 * @param range the range.
 * @return the 1-D host array.
 */
template <class Range, class T = std::remove_pointer_t<decltype(std::data(std::declval<Range &>()))>>
array wrap(Range &range)
{
    return wrap(std::data(range), {static_cast<int64_t>(std::size(range))});
}
/**
 * A gpumem::span (such as another array's host_span<T>(), a temporary) as a 1-D host array over its memory.
 * @param s the span.
 * @return the 1-D host array.
 */
template <class T>
array wrap(span<T> s)
{
    return wrap(s.data(), {static_cast<int64_t>(s.size())});
}
/**
 * numpy.empty: gpumem_host_array().
 * @param shape the extents.
 * @param d the element type.
 * @param order 'C' or 'F'.
 * @return the host array.
 */
inline array host_array(const dims &shape, const dtype &d, char order = 'C')
{
    gpumem_array *a = nullptr;
    check("gpumem::host_array", gpumem_host_array(shape.size(), shape.data(), d.get(), order, &a));
    return array::adopt(a);
}
/**
 * numpy.empty of elements of type @p T: `gpumem::host_array<double>({8})`.
 * @param shape the extents.
 * @param order 'C' or 'F'.
 * @return the host array.
 */
template <class T>
array host_array(const dims &shape, char order = 'C')
{
    return host_array(shape, dtype::of<T>(), order);
}
/**
 * numba's device_array: gpumem_device_array() in C or F @p order.
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param d the element type.
 * @param order 'C' or 'F'.
 * @param s the stream of the allocation, or empty.
 * @return the device array.
 */
inline array device_array(const context &ctx, const dims &shape, const dtype &d, char order = 'C',
                          stream_ref s = {})
{
    gpumem_array *a = nullptr;
    check("gpumem::device_array", gpumem_device_array(ctx.get(), shape.size(), shape.data(), nullptr, d.get(), order, s.get(), &a));
    return array::adopt(a);
}
/**
 * numba's device_array of elements of type @p T.
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param order 'C' or 'F'.
 * @param s the stream of the allocation, or empty.
 * @return the device array.
 */
template <class T>
array device_array(const context &ctx, const dims &shape, char order = 'C', stream_ref s = {})
{
    return device_array(ctx, shape, dtype::of<T>(), order, s);
}
/**
 * numba's device_array_like.
 * @param ctx the context (empty: the autoinit context).
 * @param like the array to imitate.
 * @param s the stream of the allocation, or empty.
 * @return the device array.
 */
inline array device_array_like(const context &ctx, const array &like, stream_ref s = {})
{
    gpumem_array *a = nullptr;
    const char *member = "gpumem::device_array_like";
    check(member, gpumem_device_array_like(ctx.get(), like.use(member, "like"), s.get(), &a));
    return array::adopt(a);
}
/**
 * numba's DeviceRecord.
 * @param ctx the context (empty: the autoinit context).
 * @param d a record dtype.
 * @param s the stream of the allocation, or empty.
 * @return the 0-d device array.
 */
inline array device_record(const context &ctx, const dtype &d, stream_ref s = {})
{
    gpumem_array *a = nullptr;
    check("gpumem::device_record", gpumem_device_record(ctx.get(), d.get(), s.get(), &a));
    return array::adopt(a);
}
/**
 * numba's to_device: gpumem_to_device(@p ctx, @p host, @p s, @p flags).
 * @param ctx the context (empty: the autoinit context).
 * @param host the host array.
 * @param s the stream of the copy, or empty.
 * @param flags GPUMEM_TO_DEVICE_* flags.
 * @return the device array.
 */
inline array to_device(const context &ctx, const array &host, stream_ref s = {}, unsigned flags = 0)
{
    gpumem_array *a = nullptr;
    check("gpumem::to_device", gpumem_to_device(ctx.get(), host.use("gpumem::to_device", "host"), s.get(), flags, &a));
    return array::adopt(a);
}
/**
 * numba's pinned_array.
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param d the element type.
 * @param order 'C' or 'F'.
 * @return the pinned array.
 */
inline array pinned_array(const context &ctx, const dims &shape, const dtype &d, char order = 'C')
{
    gpumem_array *a = nullptr;
    check("gpumem::pinned_array", gpumem_pinned_array(ctx.get(), shape.size(), shape.data(), nullptr, d.get(), order, &a));
    return array::adopt(a);
}
/**
 * numba's pinned_array of elements of type @p T (page-locked host memory,
 * which the driver copies to and from the device directly):
 * `gpumem::pinned_array<float>(ctx, {4, 6})`.
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param order 'C' or 'F'.
 * @return the pinned array.
 */
template <class T>
array pinned_array(const context &ctx, const dims &shape, char order = 'C')
{
    return pinned_array(ctx, shape, dtype::of<T>(), order);
}
/**
 * numba's mapped_array (GPUMEM_HOST_PORTABLE, GPUMEM_HOST_WRITECOMBINED).
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param d the element type.
 * @param order 'C' or 'F'.
 * @param s a stream of @p ctx, or empty.
 * @param flags the host flags.
 * @return the mapped array.
 */
inline array mapped_array(const context &ctx, const dims &shape, const dtype &d, char order = 'C',
                          stream_ref s = {}, unsigned flags = 0)
{
    gpumem_array *a = nullptr;
    check("gpumem::mapped_array", gpumem_mapped_array(ctx.get(), shape.size(), shape.data(), nullptr, d.get(), order, s.get(), flags, &a));
    return array::adopt(a);
}
/**
 * numba's mapped_array of elements of type @p T.
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param order 'C' or 'F'.
 * @param s a stream of @p ctx, or empty.
 * @param flags the host flags.
 * @return the mapped array.
 */
template <class T>
array mapped_array(const context &ctx, const dims &shape, char order = 'C', stream_ref s = {}, unsigned flags = 0)
{
    return mapped_array(ctx, shape, dtype::of<T>(), order, s, flags);
}
/**
 * A managed array (GPUMEM_MANAGED_ATTACH_GLOBAL or GPUMEM_MANAGED_ATTACH_HOST).
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param d the element type.
 * @param order 'C' or 'F'.
 * @param flags the attach flag.
 * @return the managed array.
 */
inline array managed_array(const context &ctx, const dims &shape, const dtype &d, char order = 'C',
                           unsigned flags = GPUMEM_MANAGED_ATTACH_GLOBAL)
{
    gpumem_array *a = nullptr;
    check("gpumem::managed_array", gpumem_managed_array(ctx.get(), shape.size(), shape.data(), nullptr, d.get(), order, flags, &a));
    return array::adopt(a);
}
/**
 * A managed array of elements of type @p T.
 * @param ctx the context (empty: the autoinit context).
 * @param shape the extents.
 * @param order 'C' or 'F'.
 * @param flags the attach flag.
 * @return the managed array.
 */
template <class T>
array managed_array(const context &ctx, const dims &shape, char order = 'C',
                    unsigned flags = GPUMEM_MANAGED_ATTACH_GLOBAL)
{
    return managed_array(ctx, shape, dtype::of<T>(), order, flags);
}
/**
 * gpumem_array_from_dlpack(): on success the array owns the tensor.
 * @param ctx the context, or empty (see gpumem_array_from_dlpack()).
 * @param tensor the tensor.
 * @param flags GPUMEM_DLPACK_* flags.
 * @return the array.
 */
inline array from_dlpack(const context &ctx, void *tensor, unsigned flags = 0)
{
    gpumem_array *a = nullptr;
    check("gpumem::from_dlpack", gpumem_array_from_dlpack(ctx.get(), tensor, flags, &a));
    return array::adopt(a);
}
/**
 * numba's as_cuda_array: gpumem_as_cuda_array(); @p release(@p owner) runs when the last reference goes.
 * @param ctx the context (empty: the autoinit context).
 * @param desc the producer's description.
 * @param flags GPUMEM_CAI_* flags.
 * @param release called with @p owner, or nullptr.
 * @param owner passed to @p release.
 * @return the foreign array.
 */
inline array as_cuda_array(const context &ctx, const gpumem_cuda_array_interface &desc, unsigned flags = 0,
                           void (*release)(void *) = nullptr, void *owner = nullptr)
{
    gpumem_array *a = nullptr;
    check("gpumem::as_cuda_array", gpumem_as_cuda_array(ctx.get(), &desc, flags, release, owner, &a));
    return array::adopt(a);
}
/**
 * numba's open_ipc_array: gpumem_ipc_open().
 * @param ctx the context, or empty (see gpumem_ipc_open()).
 * @param handle the handle.
 * @return the array.
 */
inline array ipc_open(const context &ctx, const gpumem_ipc_handle &handle)
{
    gpumem_array *a = nullptr;
    check("gpumem::ipc_open", gpumem_ipc_open(ctx.get(), &handle, &a));
    return array::adopt(a);
}

/* ---- registration scopes ------------------------------------------------------------------ */

/** A gpumem_pinned(), gpumem_mapped() or gpumem_register() scope; move-only, the destructor ends it. */
class registration {
public:
    registration() noexcept = default;
    /** Moves. @param o the scope, left empty. */
    registration(registration &&o) noexcept : r_(std::exchange(o.r_, nullptr)), end_(o.end_) {}
    /** Move-assigns, ending the scope held before. @param o the scope, left empty. @return *this. */
    registration &operator=(registration &&o) noexcept
    {
        if (this != &o) {
            if (r_ != nullptr)
                end_(&r_);
            r_ = std::exchange(o.r_, nullptr);
            end_ = o.end_;
        }
        return *this;
    }
    registration(const registration &) = delete;
    registration &operator=(const registration &) = delete;
    ~registration()
    {
        if (r_ != nullptr)
            end_(&r_);
    }
    /** The C handle (borrowed). @return the scope, or nullptr. */
    gpumem_registration *get() const noexcept { return r_; }
    /** Ends the scope now (gpumem_unpinned, gpumem_unmapped or gpumem_deregister) and throws its status. */
    void end()
    {
        if (r_ != nullptr)
            check("gpumem::registration::end", end_(&r_));
    }

private:
    using end_fn = gpumem_status (*)(gpumem_registration **);
    registration(gpumem_registration *r, end_fn finish) noexcept : r_(r), end_(finish) {}
    gpumem_registration *r_ = nullptr;
    end_fn end_ = nullptr;
    friend registration pinned(const context &, std::initializer_list<array>);
    friend registration mapped(const context &, std::initializer_list<array>, std::vector<array> &, stream_ref);
    friend registration register_arrays(const context &, std::initializer_list<array>);
};

namespace detail {
/**
 * The C handles of @p arrays (borrowed); an empty one throws GPUMEM_ERROR_INVALID_STATE naming it.
 * @param arrays the arrays.
 * @param member the C++ function called.
 * @param name the parameter's name ("arrays", "views").
 * @return the handles.
 */
template <class Arrays>
std::vector<gpumem_array *> handles(const Arrays &arrays, const char *member, const char *name)
{
    std::vector<gpumem_array *> v;
    v.reserve(arrays.size());
    for (const array &a : arrays)
        v.push_back(a.use(member, std::string(name) + "[" + std::to_string(v.size()) + "]"));
    return v;
}
} // namespace detail

/**
 * numba's `with pinned(*arrays):`
 * @param ctx the context (empty: the autoinit context).
 * @param arrays the host arrays.
 * @return the scope.
 */
inline registration pinned(const context &ctx, std::initializer_list<array> arrays)
{
    auto v = detail::handles(arrays, "gpumem::pinned", "arrays");
    gpumem_registration *r = nullptr;
    check("gpumem::pinned", gpumem_pinned(ctx.get(), v.data(), v.size(), &r));
    return registration(r, gpumem_unpinned);
}
/**
 * numba's `with mapped(*arrays, stream=s):`; @p device_views gets one mapped view per array.
 * @param ctx the context (empty: the autoinit context).
 * @param arrays the host arrays.
 * @param device_views receives the views.
 * @param s a stream of @p ctx, or empty.
 * @return the scope.
 */
inline registration mapped(const context &ctx, std::initializer_list<array> arrays,
                           std::vector<array> &device_views, stream_ref s = {})
{
    auto v = detail::handles(arrays, "gpumem::mapped", "arrays");
    std::vector<gpumem_array *> views(v.size(), nullptr);
    gpumem_registration *r = nullptr;
    check("gpumem::mapped", gpumem_mapped(ctx.get(), v.data(), v.size(), s.get(), &r, views.data()));
    registration scope(r, gpumem_unmapped);
    device_views.clear();
    for (gpumem_array *a : views)
        device_views.push_back(array::adopt(a));
    return scope;
}
/**
 * numba.roc's register(*arrays) (`register` is a C++ keyword).
 * @param ctx the context (empty: the autoinit context).
 * @param arrays the host arrays.
 * @return the scope.
 */
inline registration register_arrays(const context &ctx, std::initializer_list<array> arrays)
{
    auto v = detail::handles(arrays, "gpumem::register_arrays", "arrays");
    gpumem_registration *r = nullptr;
    check("gpumem::register_arrays", gpumem_register(ctx.get(), v.data(), v.size(), &r));
    return registration(r, gpumem_deregister);
}

/* ---- batched copies (gpumem/batch.h) ------------------------------------------------------- */

/**
 * gpumem_array_copy_batch(): pairs added by name, dst[:] = src, then copied
 * in one call on one stream (one plan; one kernel for the strided pieces of
 * a halo).  The batch holds a reference on every array added.
 * @code{.cpp}
 * gpumem::copy_batch faces;
 * faces.add(top_buf, d.slice({gpumem::index(1)})).add(left_buf, d.slice({gpumem::all, gpumem::index(1)}));
 * faces.run(s); // throws gpumem::error naming gpumem::copy_batch::run and the pair
 * @endcode
 */
class copy_batch {
public:
    copy_batch() = default;
    /**
     * Adds the pair dst[:] = src (destination first, as array::copy_from and gpumem_array_copy).
     * @param dst the destination.
     * @param src the source, of its shape and dtype.
     * @return *this.
     */
    copy_batch &add(const array &dst, const array &src)
    {
        dst_.push_back(dst);
        src_.push_back(src);
        return *this;
    }
    /** The pairs added. @return their number. */
    std::size_t size() const noexcept { return dst_.size(); }
    /** Forgets the pairs (and drops their references). */
    void clear() noexcept
    {
        dst_.clear();
        src_.clear();
    }
    /**
     * gpumem_array_copy_batch() of the pairs added, on @p s (empty: synchronous).  Every pair is checked before
     * anything is copied: a bad one throws, naming it ("pair 2"), with no destination written.
     * @param s the stream.
     */
    void run(stream_ref s = {}) const
    {
        std::vector<gpumem_array *> d, r;
        d.reserve(dst_.size());
        r.reserve(src_.size());
        for (std::size_t i = 0; i < dst_.size(); i++) {
            d.push_back(dst_[i].use("gpumem::copy_batch::run", "pair " + std::to_string(i) + "'s dst"));
            r.push_back(src_[i].use("gpumem::copy_batch::run", "pair " + std::to_string(i) + "'s src"));
        }
        check("gpumem::copy_batch::run", gpumem_array_copy_batch(d.size(), d.data(), r.data(), s.get()));
    }

private:
    std::vector<array> dst_, src_;
};

/**
 * gpumem_array_pack(): copies @p views, in C order, one after the other, into the C-contiguous @p buffer.
 * @param views the views (any shapes, dtypes, strides, kinds).
 * @param buffer the destination, at least their total bytes.
 * @param s the stream (empty: synchronous).
 */
inline void pack(const std::vector<array> &views, const array &buffer, stream_ref s = {})
{
    std::vector<gpumem_array *> v = detail::handles(views, "gpumem::pack", "views");
    check("gpumem::pack", gpumem_array_pack(v.size(), v.data(), buffer.use("gpumem::pack", "buffer"), s.get()));
}
/**
 * gpumem_array_unpack(): the reverse of pack(): the bytes of @p buffer, one view after the other, into @p views.
 * @param views the destinations (writable, disjoint).
 * @param buffer the C-contiguous source.
 * @param s the stream (empty: synchronous).
 */
inline void unpack(const std::vector<array> &views, const array &buffer, stream_ref s = {})
{
    std::vector<gpumem_array *> v = detail::handles(views, "gpumem::unpack", "views");
    check("gpumem::unpack", gpumem_array_unpack(v.size(), v.data(), buffer.use("gpumem::unpack", "buffer"), s.get()));
}

/* ---- pools -------------------------------------------------------------------------------- */

/** One allocation of a pool (move-only; the destructor is gpumem_allocation_free with no stream). */
class allocation {
public:
    allocation() noexcept = default;
    /**
     * Takes over an allocation the caller owns.
     * @param a the allocation.
     * @return the wrapper, which frees it.
     */
    static allocation adopt(gpumem_allocation *a) noexcept { return allocation(a); }
    /** Moves. @param o the allocation, left empty. */
    allocation(allocation &&o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
    /**
     * Move-assigns, freeing the allocation held before.
     * @param o the allocation, left empty.
     * @return *this.
     */
    allocation &operator=(allocation &&o) noexcept
    {
        if (this != &o) {
            if (a_ != nullptr)
                gpumem_allocation_free(a_, nullptr);
            a_ = std::exchange(o.a_, nullptr);
        }
        return *this;
    }
    allocation(const allocation &) = delete;
    allocation &operator=(const allocation &) = delete;
    ~allocation()
    {
        if (a_ != nullptr)
            gpumem_allocation_free(a_, nullptr);
    }
    /** The C handle (borrowed). @return the handle, or nullptr. */
    gpumem_allocation *get() const noexcept { return a_; }
    /** Whether the wrapper holds an allocation. @return true unless empty or freed. */
    explicit operator bool() const noexcept { return a_ != nullptr; }
    /** Gives up the allocation without freeing it. @return the handle, for the caller to free. */
    gpumem_allocation *detach() noexcept { return std::exchange(a_, nullptr); }
    /**
     * int(allocation): the device address (a host pool's: the host address as an integer).
     * @return the address.
     */
    uint64_t pointer() const
    {
        uint64_t p = 0;
        check("gpumem::allocation::pointer", gpumem_allocation_pointer(a_, &p));
        return p;
    }
    /** gpumem_allocation_host_pointer(): a host pool's memory. @return the host address. */
    void *host_pointer() const
    {
        void *p = nullptr;
        check("gpumem::allocation::host_pointer", gpumem_allocation_host_pointer(a_, &p));
        return p;
    }
    /** len(allocation): the size asked for. @return the size in bytes. */
    std::size_t size() const
    {
        std::size_t n = 0;
        check("gpumem::allocation::size", gpumem_allocation_size(a_, &n));
        return n;
    }
    /**
     * allocation.free(): @p s is the stream whose queued work may still use the memory.
     * @param s the stream, or empty.
     */
    void free(stream_ref s = {}) { check("gpumem::allocation::free", gpumem_allocation_free(std::exchange(a_, nullptr), s.get())); }

private:
    explicit allocation(gpumem_allocation *a) noexcept : a_(a) {}
    gpumem_allocation *a_ = nullptr;
};

/** A pool's counters (struct gpumem_pool_stats; the C name is also a function's). */
using pool_stats = struct gpumem_pool_stats;

/**
 * Zeroed counters with their size field set, for gpumem_pool_stats() and gpumem_host_pool_stats().
 * @return the counters.
 */
inline pool_stats make_pool_stats() noexcept
{
    pool_stats s;
    std::memset(&s, 0, sizeof s);
    s.size = sizeof s;
    return s;
}

/** pycuda's DeviceMemoryPool (move-only; the destructor is gpumem_pool_destroy). */
class pool {
public:
    /**
     * gpumem_pool_create(@p ctx, @p flags).
     * @param ctx the context (empty: the autoinit context).
     * @param flags 0 or GPUMEM_POOL_NO_THREAD_CACHE.
     */
    explicit pool(const context &ctx = {}, unsigned flags = 0) { check("gpumem::pool::pool", gpumem_pool_create(ctx.get(), flags, &p_)); }
    /** Moves. @param o the pool, left empty. */
    pool(pool &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    /** Move-assigns, destroying the pool held before. @param o the pool, left empty. @return *this. */
    pool &operator=(pool &&o) noexcept
    {
        if (this != &o) {
            gpumem_pool_destroy(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    pool(const pool &) = delete;
    pool &operator=(const pool &) = delete;
    ~pool() { gpumem_pool_destroy(p_); }
    /** The C handle (borrowed). @return the pool, or nullptr. */
    gpumem_pool *get() const noexcept { return p_; }
    /** gpumem_pool_destroy() now, with its status. */
    void destroy() { check("gpumem::pool::destroy", gpumem_pool_destroy(std::exchange(p_, nullptr))); }
    /**
     * DeviceMemoryPool.allocate(size), usable at once by work on @p s.
     * @param size the bytes.
     * @param s the stream that uses the block, or empty.
     * @return the allocation.
     */
    allocation allocate(std::size_t size, stream_ref s = {}) const
    {
        gpumem_allocation *a = nullptr;
        check("gpumem::pool::allocate", gpumem_pool_allocate(p_, size, s.get(), &a));
        return allocation::adopt(a);
    }
    /**
     * gpumem_pool_device_array(): a device array on a block of this pool, which goes back to it (in
     * the order of @p s) when the array's last reference goes; the context's allocator is unchanged.
     * @param shape the extents.
     * @param d the element type.
     * @param order 'C' or 'F'.
     * @param s the stream that uses the array, or empty.
     * @return the device array.
     */
    array device_array(const dims &shape, const dtype &d, char order = 'C', stream_ref s = {}) const
    {
        gpumem_array *a = nullptr;
        check("gpumem::pool::device_array",
              gpumem_pool_device_array(p_, shape.size(), shape.data(), d.get(), order, s.get(), &a));
        return array::adopt(a);
    }
    /**
     * The same for elements of type @p T.
     * @param shape the extents.
     * @param order 'C' or 'F'.
     * @param s the stream that uses the array, or empty.
     * @return the device array.
     */
    template <class T>
    array device_array(const dims &shape, char order = 'C', stream_ref s = {}) const
    {
        return device_array(shape, dtype::of<T>(), order, s);
    }
    /** gpumem_pool_block_size(). @param size the bytes. @return the block size. */
    static std::size_t block_size(std::size_t size)
    {
        std::size_t b = 0;
        check("gpumem::pool::block_size", gpumem_pool_block_size(size, &b));
        return b;
    }
    /** gpumem_pool_held_blocks(). @return the held blocks. */
    uint64_t held_blocks() const
    {
        uint64_t n = 0;
        check("gpumem::pool::held_blocks", gpumem_pool_held_blocks(p_, &n));
        return n;
    }
    /** gpumem_pool_active_blocks(). @return the active blocks. */
    uint64_t active_blocks() const
    {
        uint64_t n = 0;
        check("gpumem::pool::active_blocks", gpumem_pool_active_blocks(p_, &n));
        return n;
    }
    /** gpumem_pool_free_held(). */
    void free_held() const { check("gpumem::pool::free_held", gpumem_pool_free_held(p_)); }
    /** gpumem_pool_stop_holding(). */
    void stop_holding() const { check("gpumem::pool::stop_holding", gpumem_pool_stop_holding(p_)); }
    /** gpumem_pool_stats(). @return the counters. */
    pool_stats stats() const
    {
        pool_stats s = make_pool_stats();
        check("gpumem::pool::stats", gpumem_pool_stats(p_, &s));
        return s;
    }
    /** gpumem_pool_context(). @return the context, retained. */
    gpumem::context context() const
    {
        gpumem_context *c = nullptr;
        check("gpumem::pool::context", gpumem_pool_context(p_, &c));
        return gpumem::context::share(c);
    }

private:
    gpumem_pool *p_ = nullptr;
};

inline void context::set_pool(const pool *p) const
{
    check("gpumem::context::set_pool", gpumem_context_set_pool(c_, p != nullptr ? p->get() : nullptr));
}

/** pycuda's PageLockedMemoryPool (move-only; the destructor is gpumem_host_pool_destroy). */
class host_pool {
public:
    /**
     * gpumem_host_pool_create(@p ctx, @p flags): GPUMEM_HOST_ALLOC_* and GPUMEM_POOL_NO_THREAD_CACHE.
     * @param ctx the context (empty: the autoinit context).
     * @param flags the flags.
     */
    explicit host_pool(const context &ctx = {}, unsigned flags = 0)
    {
        check("gpumem::host_pool::host_pool", gpumem_host_pool_create(ctx.get(), flags, &p_));
    }
    /** Moves. @param o the pool, left empty. */
    host_pool(host_pool &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    /** Move-assigns, destroying the pool held before. @param o the pool, left empty. @return *this. */
    host_pool &operator=(host_pool &&o) noexcept
    {
        if (this != &o) {
            gpumem_host_pool_destroy(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    host_pool(const host_pool &) = delete;
    host_pool &operator=(const host_pool &) = delete;
    ~host_pool() { gpumem_host_pool_destroy(p_); }
    /** The C handle (borrowed). @return the pool, or nullptr. */
    gpumem_host_pool *get() const noexcept { return p_; }
    /** gpumem_host_pool_destroy() now, with its status. */
    void destroy() { check("gpumem::host_pool::destroy", gpumem_host_pool_destroy(std::exchange(p_, nullptr))); }
    /**
     * gpumem_host_pool_allocate_bytes(): page-locked bytes (host_pointer() gives them).
     * @param size the bytes.
     * @return the allocation.
     */
    allocation allocate_bytes(std::size_t size) const
    {
        gpumem_allocation *a = nullptr;
        check("gpumem::host_pool::allocate_bytes", gpumem_host_pool_allocate_bytes(p_, size, &a));
        return allocation::adopt(a);
    }
    /**
     * PageLockedMemoryPool.allocate(shape, dtype, order): a pinned array whose memory returns to the pool.
     * @param shape the extents.
     * @param d the element type.
     * @param order 'C' or 'F'.
     * @return the pinned array.
     */
    array allocate(const dims &shape, const dtype &d, char order = 'C') const
    {
        gpumem_array *a = nullptr;
        check("gpumem::host_pool::allocate", gpumem_host_pool_allocate(p_, shape.size(), shape.data(), d.get(), order, &a));
        return array::adopt(a);
    }
    /**
     * The same for elements of type @p T.
     * @param shape the extents.
     * @param order 'C' or 'F'.
     * @return the pinned array.
     */
    template <class T>
    array allocate(const dims &shape, char order = 'C') const
    {
        return allocate(shape, dtype::of<T>(), order);
    }
    /** gpumem_host_pool_held_blocks(). @return the held blocks. */
    uint64_t held_blocks() const
    {
        uint64_t n = 0;
        check("gpumem::host_pool::held_blocks", gpumem_host_pool_held_blocks(p_, &n));
        return n;
    }
    /** gpumem_host_pool_active_blocks(). @return the active blocks. */
    uint64_t active_blocks() const
    {
        uint64_t n = 0;
        check("gpumem::host_pool::active_blocks", gpumem_host_pool_active_blocks(p_, &n));
        return n;
    }
    /** gpumem_host_pool_free_held(). */
    void free_held() const { check("gpumem::host_pool::free_held", gpumem_host_pool_free_held(p_)); }
    /** gpumem_host_pool_stop_holding(). */
    void stop_holding() const { check("gpumem::host_pool::stop_holding", gpumem_host_pool_stop_holding(p_)); }
    /** gpumem_host_pool_stats(). @return the counters. */
    pool_stats stats() const
    {
        pool_stats s = make_pool_stats();
        check("gpumem::host_pool::stats", gpumem_host_pool_stats(p_, &s));
        return s;
    }
    /** gpumem_host_pool_context(). @return the context, retained. */
    gpumem::context context() const
    {
        gpumem_context *c = nullptr;
        check("gpumem::host_pool::context", gpumem_host_pool_context(p_, &c));
        return gpumem::context::share(c);
    }

private:
    gpumem_host_pool *p_ = nullptr;
};

/**
 * A std::pmr::memory_resource over a page-locked pool: std::pmr containers
 * whose elements live in pinned memory, reused through the pool.  Each
 * allocation is gpumem_host_pool_allocate_bytes() of the size asked for
 * plus one pointer, where the allocation's handle is kept (after the
 * elements), so deallocation is gpumem_allocation_free() of that handle:
 * the resource keeps no table of its own.  Blocks are page-aligned on the
 * driver; a larger alignment than a block has is met by asking for
 * alignment - 1 bytes more.  Failures throw gpumem::bad_alloc (a
 * std::bad_alloc).  The pool must outlive the memory handed out; two
 * resources over one pool compare equal.
 */
class pool_resource : public std::pmr::memory_resource {
public:
    /** A resource over @p pool, which must outlive it. @param pool the host pool. */
    explicit pool_resource(const host_pool &pool) noexcept : pool_(pool.get()) {}
    /** The host pool. @return the C handle. */
    gpumem_host_pool *pool() const noexcept { return pool_; }

protected:
    /**
     * Allocates from the pool; throws gpumem::bad_alloc.
     * @param bytes the size.
     * @param alignment the alignment.
     * @return the memory.
     */
    void *do_allocate(std::size_t bytes, std::size_t alignment) override
    {
        const std::size_t trailer = trailer_offset(bytes);
        if (trailer > SIZE_MAX - sizeof(gpumem_allocation *) - alignment)
            throw bad_alloc("gpumem::pool_resource::allocate", GPUMEM_ERROR_OVERFLOW,
                            "the size and alignment asked for overflow size_t");
        std::size_t size = trailer + sizeof(gpumem_allocation *);
        gpumem_allocation *a = allocate_raw(size);
        auto base = reinterpret_cast<std::uintptr_t>(host_pointer(a));
        std::uintptr_t p = base;
        if (p % alignment != 0) { /* the block is less aligned than asked: take a larger one */
            gpumem_allocation_free(a, nullptr);
            a = allocate_raw(size + alignment - 1);
            base = reinterpret_cast<std::uintptr_t>(host_pointer(a));
            p = (base + alignment - 1) / alignment * alignment;
        }
        std::memcpy(reinterpret_cast<void *>(p + trailer), &a, sizeof a);
        return reinterpret_cast<void *>(p);
    }
    /** Returns memory to the pool. @param p the memory. @param bytes its size. */
    void do_deallocate(void *p, std::size_t bytes, std::size_t) override
    {
        gpumem_allocation *a = nullptr;
        std::memcpy(&a, static_cast<char *>(p) + trailer_offset(bytes), sizeof a);
        gpumem_allocation_free(a, nullptr);
    }
    /**
     * Equal when both allocate from the same host pool.
     * @param other a resource.
     * @return whether they are equal.
     */
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override
    {
        auto *o = dynamic_cast<const pool_resource *>(&other);
        return o != nullptr && o->pool_ == pool_;
    }

private:
    static std::size_t trailer_offset(std::size_t bytes) noexcept
    {
        const std::size_t a = alignof(gpumem_allocation *);
        return bytes > SIZE_MAX - a ? bytes : (bytes + a - 1) / a * a;
    }
    gpumem_allocation *allocate_raw(std::size_t size)
    {
        gpumem_allocation *a = nullptr;
        gpumem_status st = gpumem_host_pool_allocate_bytes(pool_, size, &a);
        if (st != GPUMEM_OK)
            throw bad_alloc("gpumem::pool_resource::allocate", st);
        return a;
    }
    static void *host_pointer(gpumem_allocation *a)
    {
        void *p = nullptr;
        gpumem_status st = gpumem_allocation_host_pointer(a, &p);
        if (st != GPUMEM_OK) {
            gpumem_allocation_free(a, nullptr);
            throw bad_alloc("gpumem::pool_resource::allocate", st);
        }
        return p;
    }
    gpumem_host_pool *pool_;
};

/* ---- modules and kernels ------------------------------------------------------------------ */

class module;

/** A kernel of a module (no ownership: valid while its module is). */
class function {
public:
    function() noexcept = default;
    /** Wraps a function handle of a module (borrowed). @param f the function. */
    explicit function(gpumem_function *f) noexcept : f_(f) {}
    /** The C handle. @return the function. */
    gpumem_function *get() const noexcept { return f_; }
    /** gpumem_function_name(). @return the name. */
    std::string name() const
    {
        const char *n = nullptr;
        check("gpumem::function::name", gpumem_function_name(f_, &n));
        return n;
    }
    /** gpumem_function_attribute(). @param attr the attribute. @return its value. */
    int attribute(gpumem_function_attr attr) const
    {
        int v = 0;
        check("gpumem::function::attribute", gpumem_function_attribute(f_, attr, &v));
        return v;
    }
    /** gpumem_function_set_attribute(). @param attr a settable attribute. @param value its value. */
    void set_attribute(gpumem_function_attr attr, int value) const
    {
        check("gpumem::function::set_attribute", gpumem_function_set_attribute(f_, attr, value));
    }
    /**
     * gpumem_function_max_active_blocks().
     * @param block_threads threads per block.
     * @param shared_bytes dynamic shared memory per block.
     * @return blocks per multiprocessor.
     */
    int max_active_blocks(int block_threads, std::size_t shared_bytes = 0) const
    {
        int n = 0;
        check("gpumem::function::max_active_blocks", gpumem_function_max_active_blocks(f_, block_threads, shared_bytes, &n));
        return n;
    }
    /**
     * gpumem_launch(): @p params points at one pointer per kernel parameter (nullptr: none).
     * @param grid blocks in x, y, z.
     * @param block threads per block in x, y, z.
     * @param shared_bytes dynamic shared memory per block.
     * @param s the stream, or empty.
     * @param params the kernel parameters.
     */
    void launch(const unsigned (&grid)[3], const unsigned (&block)[3], unsigned shared_bytes = 0,
                stream_ref s = {}, void **params = nullptr) const
    {
        check("gpumem::function::launch", gpumem_launch(f_, grid, block, shared_bytes, s.get(), params));
    }

private:
    gpumem_function *f_ = nullptr;
};

/** A module of the kernel cache (gpumem/module.h); copy = gpumem_module_retain. */
class module {
public:
    module() noexcept = default;
    /**
     * gpumem_module_load(): loaded once per context and image content.
     * @param ctx the context (empty: the autoinit context).
     * @param image PTX, cubin or fat binary.
     * @param size its length, or 0.
     * @return the module.
     */
    static module load(const context &ctx, const void *image, std::size_t size = 0)
    {
        gpumem_module *m = nullptr;
        check("gpumem::module::load", gpumem_module_load(ctx.get(), image, size, &m));
        return module(m);
    }
    /**
     * Takes over a reference the caller owns (of gpumem_module_load() or gpumem_module_retain()).
     * @param m the module.
     * @return the wrapper, which releases it.
     */
    static module adopt(gpumem_module *m) noexcept { return module(m); }
    /** Retains a borrowed module. @param m the module, or nullptr. @return the wrapper. */
    static module share(gpumem_module *m)
    {
        if (m != nullptr)
            check("gpumem::module::share", gpumem_module_retain(m));
        return module(m);
    }
    /** Copies: gpumem_module_retain(). @param o the module. */
    module(const module &o) : m_(o.m_)
    {
        if (m_ != nullptr)
            check("gpumem::module::module", gpumem_module_retain(m_));
    }
    /** Moves. @param o the module, left empty. */
    module(module &&o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
    /** Assigns (copy and swap). @param o the module. @return *this. */
    module &operator=(module o) noexcept
    {
        std::swap(m_, o.m_);
        return *this;
    }
    ~module() { gpumem_module_release(m_); }
    /** The C handle (borrowed). @return the module, or nullptr. */
    gpumem_module *get() const noexcept { return m_; }
    /** Whether the wrapper holds a module. @return true unless empty. */
    explicit operator bool() const noexcept { return m_ != nullptr; }
    /** gpumem_module_get_function(). @param name the kernel's name. @return the kernel. */
    gpumem::function function(const char *name) const
    {
        gpumem_function *f = nullptr;
        check("gpumem::module::function", gpumem_module_get_function(m_, name, &f));
        return gpumem::function(f);
    }
    /** A global's device address and size. @param name the variable's name. @return its address and size. */
    std::pair<uint64_t, std::size_t> global(const char *name) const
    {
        uint64_t p = 0;
        std::size_t n = 0;
        check("gpumem::module::global", gpumem_module_get_global(m_, name, &p, &n));
        return {p, n};
    }
    /**
     * numba's const.array_like.
     * @param symbol the variable's name.
     * @param a the data.
     * @param s the stream of the copy, or empty.
     * @return the array over the variable.
     */
    array const_array_like(const char *symbol, const array &a, stream_ref s = {}) const
    {
        gpumem_array *d = nullptr;
        const char *member = "gpumem::module::const_array_like";
        check(member, gpumem_const_array_like(m_, symbol, a.use(member, "a"), s.get(), &d));
        return array::adopt(d);
    }

private:
    explicit module(gpumem_module *m) noexcept : m_(m) {}
    gpumem_module *m_ = nullptr;
};

/* ---- device data and occupancy ----------------------------------------------------------- */

/** pycuda's DeviceData (move-only; the destructor is gpumem_device_data_destroy). */
class device_data {
public:
    /**
     * gpumem_device_data_create(@p device).
     * @param device a device ordinal, or GPUMEM_DEVICE_DATA_DEFAULT.
     */
    explicit device_data(int device = GPUMEM_DEVICE_DATA_DEFAULT) { check("gpumem::device_data::device_data", gpumem_device_data_create(device, &d_)); }
    /** Moves. @param o the object, left empty. */
    device_data(device_data &&o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
    /** Move-assigns, freeing the object held before. @param o the object, left empty. @return *this. */
    device_data &operator=(device_data &&o) noexcept
    {
        if (this != &o) {
            gpumem_device_data_destroy(d_);
            d_ = std::exchange(o.d_, nullptr);
        }
        return *this;
    }
    device_data(const device_data &) = delete;
    device_data &operator=(const device_data &) = delete;
    ~device_data() { gpumem_device_data_destroy(d_); }
    /** The C handle (borrowed). @return the object. */
    const gpumem_device_data *get() const noexcept { return d_; }
    /** gpumem_device_data_get(). @param field the field. @return its value. */
    int operator[](gpumem_device_data_field field) const
    {
        int v = 0;
        check("gpumem::device_data::operator[]", gpumem_device_data_get(d_, field, &v));
        return v;
    }
    /** gpumem_device_data_align_bytes(). @param word_size 4, 8 or 16. @return the alignment in bytes. */
    std::size_t align_bytes(std::size_t word_size = 4) const
    {
        std::size_t n = 0;
        check("gpumem::device_data::align_bytes", gpumem_device_data_align_bytes(d_, word_size, &n));
        return n;
    }
    /**
     * gpumem_device_data_align().
     * @param bytes the size.
     * @param word_size 4, 8 or 16.
     * @return the rounded size.
     */
    std::size_t align(std::size_t bytes, std::size_t word_size = 4) const
    {
        std::size_t n = 0;
        check("gpumem::device_data::align", gpumem_device_data_align(d_, bytes, word_size, &n));
        return n;
    }
    /** gpumem_device_data_align_words(). @param word_size 4, 8 or 16. @return the alignment in words. */
    std::size_t align_words(std::size_t word_size) const
    {
        std::size_t n = 0;
        check("gpumem::device_data::align_words", gpumem_device_data_align_words(d_, word_size, &n));
        return n;
    }
    /**
     * gpumem_device_data_align_dtype().
     * @param elements the count.
     * @param d the dtype.
     * @return the rounded count.
     */
    std::size_t align_dtype(std::size_t elements, const dtype &d) const
    {
        std::size_t n = 0;
        check("gpumem::device_data::align_dtype", gpumem_device_data_align_dtype(d_, elements, d.get(), &n));
        return n;
    }
    /**
     * pycuda's OccupancyRecord(devdata, threads, shared_mem, registers).
     * @param threads threads per block.
     * @param shared_mem shared memory per block.
     * @param registers registers per thread, or 0.
     * @return the record.
     */
    gpumem_occupancy_record occupancy(int threads, std::size_t shared_mem = 0, int registers = 0) const
    {
        gpumem_occupancy_record r;
        std::memset(&r, 0, sizeof r);
        r.size = sizeof r;
        check("gpumem::device_data::occupancy", gpumem_occupancy(d_, threads, shared_mem, registers, &r));
        return r;
    }

private:
    gpumem_device_data *d_ = nullptr;
};

/* ---- the library, the backend and the devices --------------------------------------------- */

/** gpumem_version(). @return major * 10000 + minor * 100 + patch. */
inline unsigned version() noexcept { return gpumem_version(); }
/** gpumem_version_string(). @return "major.minor.patch". */
inline const char *version_string() noexcept { return gpumem_version_string(); }
/** gpumem_backend(): "cuda" or "sim". @return the backend's name. */
inline const char *backend()
{
    const char *name = nullptr;
    check("gpumem::backend", gpumem_backend(&name));
    return name;
}
/** gpumem_driver_version(). @return the driver's CUDA version. */
inline int driver_version()
{
    int v = 0;
    check("gpumem::driver_version", gpumem_driver_version(&v));
    return v;
}
/** gpumem_device_count(). @return the number of devices. */
inline int device_count()
{
    int n = 0;
    check("gpumem::device_count", gpumem_device_count(&n));
    return n;
}
/** gpumem_device_name(). @param device the device ordinal. @return its name. */
inline std::string device_name(int device)
{
    char name[256];
    check("gpumem::device_name", gpumem_device_name(device, name, sizeof name));
    return name;
}
/** gpumem_device_compute_capability(). @param device the device ordinal. @return major and minor. */
inline std::pair<int, int> compute_capability(int device)
{
    int major = 0, minor = 0;
    check("gpumem::compute_capability", gpumem_device_compute_capability(device, &major, &minor));
    return {major, minor};
}
/** gpumem_device_total_memory(). @param device the device ordinal. @return the bytes. */
inline uint64_t device_total_memory(int device)
{
    uint64_t n = 0;
    check("gpumem::device_total_memory", gpumem_device_total_memory(device, &n));
    return n;
}
/**
 * gpumem_device_attribute().
 * @param device the device ordinal.
 * @param attr the attribute.
 * @return its value.
 */
inline int device_attribute(int device, gpumem_device_attr attr)
{
    int v = 0;
    check("gpumem::device_attribute", gpumem_device_attribute(device, attr, &v));
    return v;
}
/**
 * pycuda's get_default_device(fallback).
 * @param fallback the ordinal when none is named.
 * @return the ordinal.
 */
inline int default_device(int fallback = 0)
{
    int d = 0;
    check("gpumem::default_device", gpumem_get_default_device(fallback, &d));
    return d;
}
/** pycuda's clear_context_caches(): gpumem_clear_context_caches(). */
inline void clear_context_caches() { check("gpumem::clear_context_caches", gpumem_clear_context_caches()); }

} // namespace gpumem

#if defined(__cpp_lib_ranges)
namespace std::ranges {
template <class T>
inline constexpr bool enable_borrowed_range<gpumem::span<T>> = true;
template <class T>
inline constexpr bool enable_view<gpumem::span<T>> = true;
} // namespace std::ranges
#endif

#endif /* GPUMEM_HPP */

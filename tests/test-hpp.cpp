/*
 * test-hpp.cpp - include/gpumem.hpp: the wrappers call the C functions with
 * their ownership rules (copy = retain, move, destructors end handles),
 * errors carry the member, the status and the message, views (integer
 * indices included), spans, shapes (of size_t too), element access that
 * counts its indices, copies named by their direction, scope guards, pool
 * arrays, the pmr resource over the page-locked pool and the memory report;
 * pinned_array<T> and the other typed makers, slice() from a vector, a
 * pointer and count or arguments, and a released array reported as released
 * (issue 26).  Built by
 * tests/test-cpp.sh as C++17 and as C++20; runs on the simulator.
 */
#include <gpumem.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <memory_resource>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "setup.h"
#include "tap.h"

#include <unistd.h>

namespace {

int refcount(const gpumem::context &c) { return c.refcount(); }

/* Runs f, which must throw gpumem::error with status @p want and a message containing @p needle; what()
 * is "member: STATUS: message", and its member that of the wrapper named @p member. */
template <class F>
void throws(F f, gpumem_status want, const char *needle, const char *name, const char *member = nullptr)
{
    try {
        f();
        ok(0, "%s: throws", name);
        diag("nothing was thrown");
    } catch (const gpumem::error &e) {
        std::string what = e.what(), m = e.member();
        bool good = e.status() == want && what.find(needle) != std::string::npos &&
                    what.find(m.empty() ? std::string(gpumem_status_string(want))
                                        : m + ": " + gpumem_status_string(want) + ": ") == 0 &&
                    m.rfind("gpumem::", 0) == 0 && (member == nullptr || m == member);
        ok(good, "%s: throws %s", name, gpumem_status_string(want));
        if (!good)
            diag("got %s from '%s': %s", e.name(), e.member(), e.what());
    }
}

} // namespace

int main()
{
    gpumem_context *raw = test_context_or_skip_all();
    plan(109);
    gpumem::context ctx = gpumem::context::adopt(raw); /* takes over gpumem_test_context's reference */

    /* ---- copy = retain, move, destructor = release ---- */
    is_int(refcount(ctx), 1, "a new context holds one reference");
    {
        gpumem::context copy = ctx;
        is_int(refcount(ctx), 2, "copying a context retains it");
        gpumem::context moved = std::move(copy);
        is_int(refcount(ctx), 2, "moving a context does not");
        ok(!copy && moved.get() == ctx.get(), "the moved-from wrapper is empty");
    }
    is_int(refcount(ctx), 1, "the destructors released both references");
    {
        gpumem::context a = gpumem::context::autoinit();
        gpumem::context b = gpumem::context::autoinit();
        ok(a.get() == b.get(), "autoinit gives the one default context, retained");
    }

    /* ---- errors: status, message, no change ---- */
    throws([] { gpumem::context::create(1000); }, GPUMEM_ERROR_INVALID_DEVICE, "1000", "context::create(1000)");
    throws([&] { gpumem::device_array<float>(ctx, {-1, 2}); }, GPUMEM_ERROR_NEGATIVE_DIMENSION,
           "gpumem_device_array", "a negative extent");
    throws([] { gpumem::dims d(std::vector<int>(33, 1)); }, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "33",
           "33 extents");

    /* ---- dtypes ---- */
    is_int(gpumem::dtype::of<float>().type(), GPUMEM_FLOAT32, "dtype::of<float>");
    is_int(gpumem::dtype::of<std::int64_t>().type(), GPUMEM_INT64, "dtype::of<int64_t>");
    is_int(gpumem::dtype::of<unsigned char>().type(), GPUMEM_UINT8, "dtype::of<unsigned char>");
    is_int(gpumem::dtype::of<std::complex<double>>().type(), GPUMEM_COMPLEX128, "dtype::of<complex<double>>");
    ok(gpumem::dtype::from_typestr("<f8") == gpumem::dtype::of<double>(), "from_typestr(\"<f8\") == double");
    is_str(gpumem::dtype::from_descr("[('x', '<f4'), ('n', '<i8')]").descr().c_str(),
           "[('x', '<f4'), ('n', '<i8')]", "a record's descr round-trips");

    /* ---- arrays: shapes, strides, views, copies ---- */
    std::vector<std::int32_t> v(24);
    std::iota(v.begin(), v.end(), 0);
    gpumem::array h = gpumem::wrap(v.data(), {4, 6});
    gpumem::array d = gpumem::to_device(ctx, h);
    ok(d.shape() == gpumem::dims{4, 6}, "shape() is {4, 6}");
    ok(d.strides() == gpumem::dims{24, 4}, "strides() are {24, 4} bytes");
    std::int64_t n = 1;
    for (std::int64_t e : d.shape()) /* shapes are ranges */
        n *= e;
    is_int(n, d.size(), "a shape is a range: the product of its extents is the size");
    is_int(d.kind(), GPUMEM_MEMORY_DEVICE, "to_device gives a device array");
    ok(d.context().get() == ctx.get(), "the array's context is ctx");
    gpumem::array t = d.transpose().slice({{gpumem::none, gpumem::none, -1}});  /* d.T[::-1] */
    ok(t.shape() == gpumem::dims{6, 4}, "a transposed, reversed view is 6 x 4");
    is_int(t.get<std::int32_t>({0, 1}), 11, "d.T[::-1][0, 1] == d[1, 5] == 11");
    d.set<std::int32_t>({2, 3}, -5);
    std::array<std::int32_t, 4> col{};
    d.slice({gpumem::all, {3, 4, 1}}).copy_to_host(gpumem::wrap(col.data(), {4, 1}));
    ok(col[0] == 3 && col[1] == 9 && col[2] == -5 && col[3] == 21, "column 3 copied out: 3 9 -5 21");
    throws([&] { d.fill(1.0); }, GPUMEM_ERROR_DTYPE_MISMATCH, "item size is 4", "fill with a double into int32");
    std::vector<gpumem::array> pieces = d.ravel().split(10);
    ok(pieces.size() == 3 && pieces[2].size() == 4, "split(10) of 24 elements: 10, 10, 4");
    is_int(pieces[1].get<std::int32_t>({0}), 10, "the second piece starts at element 10");
    gpumem::array back = gpumem::host_array({4, 6}, gpumem::dtype::of<std::int32_t>(), 'F');
    back.copy_from(d);
    gpumem::span<std::int32_t> s = back.host_span<std::int32_t>();
    ok(s.size() == 24 && s[1] == 6 && s[4] == 1, "an F-ordered host array's span: s[1] = d[1, 0], s[4] = d[0, 1]");
    throws([&] { back.host_span<double>(); }, GPUMEM_ERROR_DTYPE_MISMATCH, "8", "a span of the wrong item size");
    throws([&] { back.slice({{0, 4, 2}}).host_span<std::int32_t>(); }, GPUMEM_ERROR_COPY_REQUIRED,
           "not contiguous", "a span of a strided view");
    throws([&] { d.host_span<std::int32_t>(); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem_array_host_pointer",
           "a span of device memory");

    /* ---- element access counts its indices ---- */
    throws([&] { d.get<std::int32_t>({0}); }, GPUMEM_ERROR_INVALID_VALUE,
           "gpumem::array::get: GPUMEM_ERROR_INVALID_VALUE: gpumem_array_get_item_n: nindex 1: the array has 2 "
           "dimensions", "get<T>({0}) of a 2-D array", "gpumem::array::get");
    throws([&] { d.set<std::int32_t>({0, 0, 0}, 99); }, GPUMEM_ERROR_INVALID_VALUE, "nindex 3",
           "set<T>({0, 0, 0}) of a 2-D array", "gpumem::array::set");
    is_int(d.get<std::int32_t>({0, 0}), 0, "and wrote nothing");

    /* ---- copies named by direction; errors name the C++ member ---- */
    {
        std::vector<std::int32_t> three(3, 0), row(6, 0);
        throws([&] { d.copy_from(gpumem::wrap(three)); }, GPUMEM_ERROR_SHAPE_MISMATCH,
               "gpumem::array::copy_from: GPUMEM_ERROR_SHAPE_MISMATCH: gpumem_array_copy: 'dst' has shape (4, 6)",
               "copy_from of another shape names the member, then the C function", "gpumem::array::copy_from");
        gpumem::array r1 = d.slice({gpumem::index(1)});
        r1.copy_to(gpumem::wrap(row));
        ok(r1.ndim() == 1 && row[0] == 6 && row[5] == 11, "d[1] (gpumem::index) copy_to a 1-D vector: 6 .. 11");
        std::vector<std::int32_t> inner{-1, -2, -3, -4};
        d.slice({gpumem::index(1), {1, -1}}).copy_from_host(gpumem::wrap(inner));
        ok(d.get<std::int32_t>({1, 1}) == -1 && d.get<std::int32_t>({1, 4}) == -4 && d.get<std::int32_t>({1, 5}) == 11 &&
               d.get<std::int32_t>({1, 0}) == 6,
           "d[1, 1:-1].copy_from_host(a 1-D vector of 4) writes d[1, 1..4] only");
        throws([&] { d.slice({gpumem::index(1)}).copy_from_host(r1); }, GPUMEM_ERROR_INVALID_VALUE,
               "'src' is a device array, not a host-side one", "copy_from_host of a device array",
               "gpumem::array::copy_from_host");
        throws([&] { gpumem::wrap(row).copy_to_host(r1); }, GPUMEM_ERROR_INVALID_VALUE, "arguments swapped?",
               "host.copy_to_host(device): the C check asks whether the arguments were swapped",
               "gpumem::array::copy_to_host");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        r1.copy_to_device(gpumem::wrap(row)); /* deprecated, still there: it copies row into r1 */
#pragma GCC diagnostic pop
        is_int(r1.get<std::int32_t>({0}), 6, "the deprecated copy_to_device still copies its argument in");
        d.slice({gpumem::index(1)}).copy_from_host(gpumem::wrap(row)); /* d[1] as it was */
        is_str(gpumem::memory_kind_name(d.kind()), "device", "gpumem::memory_kind_name");
    }

    /* ---- shapes from size_t, mixed integer types, and ranges of them ---- */
    {
        std::size_t rows = 3, cols = 5;
        std::vector<std::size_t> vshape{rows, cols};
        std::array<std::size_t, 2> ashape{rows, cols};
        gpumem::array a1 = gpumem::device_array<float>(ctx, {rows, cols});
        gpumem::array a2 = gpumem::device_array<float>(ctx, {rows, 5});
        gpumem::array a3 = gpumem::device_array<float>(ctx, gpumem::dims(vshape));
        gpumem::array a4 = gpumem::host_array(gpumem::dims(ashape), gpumem::dtype::of<float>());
        ok(a1.shape() == gpumem::dims{3, 5} && a2.shape() == a1.shape() && a3.shape() == a1.shape() &&
               a4.shape() == a1.shape(),
           "{size_t, size_t}, {size_t, int}, vector<size_t> and array<size_t> shapes are all (3, 5)");
        throws([] { gpumem::dims d1{static_cast<std::size_t>(1) << 63, std::size_t{2}}; }, GPUMEM_ERROR_OVERFLOW,
               "9223372036854775808 does not fit in int64_t", "an extent past INT64_MAX", "gpumem::dims::dims");
        throws([] { gpumem::dims d2(std::vector<unsigned long long>{~0ULL}); }, GPUMEM_ERROR_OVERFLOW,
               "18446744073709551615", "a range value past INT64_MAX", "gpumem::dims::dims");
    }

    /* ---- the builtin dtype of an expression (C's GPUMEM_DTYPE_OF) ---- */
    {
        float f[2][3] = {};
        const std::uint16_t u = 0;
        ok(gpumem::dtype_of(f[1][2]) == gpumem::dtype::of<float>() && gpumem::dtype_of(u).type() == GPUMEM_UINT16,
           "gpumem::dtype_of(x) is the dtype of x's type");
        ok(gpumem::type_of<double>() == GPUMEM_FLOAT64 && gpumem::type_of<const std::int8_t &>() == GPUMEM_INT8,
           "gpumem::type_of<T>() is its gpumem_type");
    }

    /* ---- streams and scope guards ---- */
    {
        gpumem::stream st(ctx);
        std::vector<float> x(1000, 2.0f);
        gpumem::array px = gpumem::pinned_array(ctx, {1000}, gpumem::dtype::of<float>());
        {
            gpumem::auto_synchronize scope(st);
            gpumem::array dx = gpumem::to_device(ctx, gpumem::wrap(x), st);
            dx.fill(3.0f, st);
            dx.copy_to_host(px, st);
        }
        gpumem::span<float> ps = px.host_span<float>();
        ok(ps[0] == 3.0f && ps[999] == 3.0f, "auto_synchronize's end waited for the queued copies");
        gpumem::stream moved = std::move(st);
        ok(!st && moved, "a moved stream leaves an empty one");
        moved.destroy();
        ok(!moved, "destroy() ends the stream");
    }
    /* ---- events ---- */
    {
        const std::int64_t n = 1 << 16;
        gpumem::stream a(ctx, GPUMEM_STREAM_NON_BLOCKING), b(ctx, GPUMEM_STREAM_NON_BLOCKING);
        gpumem::event e0(ctx), e1(ctx, GPUMEM_EVENT_BLOCKING_SYNC);
        gpumem::array x = gpumem::device_array<float>(ctx, {n});
        gpumem::array y = gpumem::device_array<float>(ctx, {n});
        y.fill(0.0f);
        e0.record(a);
        x.fill(5.0f, a);
        e1.record(a);
        b.wait(e1);
        gpumem::check(gpumem_array_copy(y.get(), x.get(), b.get()));
        b.synchronize();
        ok(y.get<float>({n - 1}) == 5.0f, "stream::wait(event): b's copy read what a's fill wrote");
        ok(e1.query() && e0.query(), "event::query(): both complete");
        float ms = e0.elapsed_ms(e1);
        ok(ms >= 0.0f, "event::elapsed_ms() from the first to the second (%.3f ms)", static_cast<double>(ms));
        ok(e1.context().get() == ctx.get(), "event::context() is the context it was made in");
        x.fill(6.0f, a);
        e1.record(a);
        e1.wait(); /* the default stream of e1's context */
        gpumem::check(gpumem_array_copy(y.get(), x.get(), ctx.default_stream().get()));
        ctx.default_stream().synchronize();
        ok(y.get<float>({0}) == 6.0f, "event::wait() with no stream: the default stream waited");
        gpumem::event nt(ctx, GPUMEM_EVENT_DISABLE_TIMING);
        nt.record(a);
        nt.synchronize();
        throws([&] { e0.elapsed_ms(nt); }, GPUMEM_ERROR_INVALID_VALUE, "GPUMEM_EVENT_DISABLE_TIMING",
               "elapsed_ms() to an event without timing", "gpumem::event::elapsed_ms");
        gpumem::event moved = std::move(e0);
        ok(!e0 && moved, "a moved event leaves an empty one");
        moved.destroy();
        ok(!moved, "destroy() ends the event");
        gpumem::stream gone = std::move(b);
        throws([&] { b.wait(e1); }, GPUMEM_ERROR_NULL_ARGUMENT, "the stream is empty", "an empty stream waits",
               "gpumem::stream::wait");
    }
    {
        ctx.set_dealloc_limits(0, 0.0);
        gpumem::defer_cleanup guard(ctx);
        { gpumem::array tmp = gpumem::device_array<double>(ctx, {100}); }
        std::size_t pending = 0;
        gpumem_context_pending_deallocations(ctx.get(), &pending, nullptr);
        is_int((long long)pending, 1, "inside defer_cleanup a released array's free is queued");
        guard.end();
        gpumem_context_pending_deallocations(ctx.get(), &pending, nullptr);
        is_int((long long)pending, 0, "the guard's end flushed it");
        ctx.set_dealloc_limits(10, 0.2);
    }

    /* ---- the trace: start, a region as a scope guard, a marker, stop ---- */
    {
        std::string path = std::string(std::getenv("TMPDIR") != nullptr && *std::getenv("TMPDIR") ? std::getenv("TMPDIR")
                                                                                                  : "/tmp") +
                           "/test-hpp-" + std::to_string((long)getpid()) + ".gmt";
        gpumem::trace_start(path);
        {
            gpumem::trace_region outer("cxx-outer");
            gpumem::trace_region inner("cxx-inner");
            gpumem::trace_mark("cxx-marker");
        }
        gpumem_status popped = gpumem_trace_pop();
        gpumem::trace_stop();
        is_int(popped, GPUMEM_ERROR_INVALID_STATE, "trace_region's destructors closed both regions");
        std::FILE *f = std::fopen(path.c_str(), "rb");
        std::string bytes;
        char buf[4096];
        std::size_t n;
        while (f != nullptr && (n = std::fread(buf, 1, sizeof buf, f)) > 0)
            bytes.append(buf, n);
        if (f != nullptr)
            std::fclose(f);
        std::remove(path.c_str());
        ok(bytes.compare(0, 8, "GPUMEMTR") == 0 && bytes.find("cxx-outer") != std::string::npos &&
               bytes.find("cxx-inner") != std::string::npos && bytes.find("cxx-marker") != std::string::npos,
           "the trace file holds the regions' and the marker's names");
        throws([] { gpumem::trace_stop(); }, GPUMEM_ERROR_INVALID_STATE, "no trace is recording",
               "trace_stop without a trace", "gpumem::trace_stop");
    }

    /* ---- pools ---- */
    {
        gpumem::pool p(ctx);
        gpumem::allocation a = p.allocate(1000);
        is_int((long long)a.size(), 1000, "allocation.size() is the size asked for");
        is_int((long long)p.active_blocks(), 1, "one active block");
        a.free();
        is_int((long long)p.held_blocks(), 1, "free() returns it to the pool");
        throws([&] { a.free(); }, GPUMEM_ERROR_NULL_ARGUMENT, "alloc", "a second free of the emptied wrapper");
        { gpumem::allocation b = p.allocate(1000); }
        is_int((long long)p.stats().hits, 1, "the destructor freed the second allocation, a hit");
        gpumem::stream ps(ctx);
        {
            gpumem::array pa = p.device_array<double>({8, 8}, 'F', ps);
            ok(pa.kind() == GPUMEM_MEMORY_DEVICE && pa.strides() == gpumem::dims{8, 64} && p.active_blocks() == 1,
               "pool::device_array<double>({8, 8}, 'F', stream): a device array on a block of the pool");
            pa.fill(2.5, ps);
            is_int(static_cast<long long>(pa.get<double>({7, 7}, ps) * 2), 5, "which holds its values");
        }
        ok(p.active_blocks() == 0 && p.held_blocks() == 2, "its release gave the block back to the pool");
        throws([&] { p.device_array<float>({-1}); }, GPUMEM_ERROR_NEGATIVE_DIMENSION, "gpumem_pool_device_array",
               "a negative extent", "gpumem::pool::device_array");
    }
    {
        gpumem::host_pool hp(ctx);
        gpumem::pool_resource res(hp);
        {
            std::pmr::vector<std::int64_t> big(10000, 7, &res);
            int pinned = 0;
            gpumem_host_is_pinned(big.data(), big.size() * sizeof(std::int64_t), &pinned);
            ok(pinned == 1 && std::accumulate(big.begin(), big.end(), std::int64_t(0)) == 70000,
               "a pmr::vector over the resource lives in page-locked memory");
            void *q = res.allocate(100, 4096);
            ok(reinterpret_cast<std::uintptr_t>(q) % 4096 == 0, "an allocation aligned to 4096 is aligned");
            is_int((long long)hp.active_blocks(), 2, "the vector and the aligned allocation: two blocks");
            res.deallocate(q, 100, 4096);
        }
        is_int((long long)hp.active_blocks(), 0, "deallocation gave every block back");
        gpumem::pool_resource other(hp);
        ok(res.is_equal(other), "two resources over one pool are equal");
        try {
            /* volatile: a size the compiler sees is refused at build time
             * under ASan's flags (-Walloc-size-larger-than) */
            volatile std::size_t too_big = SIZE_MAX - 2;
            void *huge = res.allocate(too_big, 8);
            res.deallocate(huge, too_big, 8);
            ok(0, "an allocation of SIZE_MAX - 2 bytes throws");
        } catch (const gpumem::bad_alloc &e) {
            ok(e.status() == GPUMEM_ERROR_OVERFLOW &&
                   std::string(e.what()).rfind("gpumem::pool_resource::allocate: GPUMEM_ERROR_OVERFLOW: the size", 0) == 0,
               "an allocation of SIZE_MAX - 2 bytes throws gpumem::bad_alloc naming the member and the overflow");
        }
    }
    /* ---- batched copies, pack and unpack ---- */
    {
        std::vector<std::int32_t> f(6 * 5);
        std::iota(f.begin(), f.end(), 0);
        gpumem::array fd = gpumem::to_device(ctx, gpumem::wrap(f.data(), {6, 5}));
        gpumem::array c0 = fd.slice({{1, 5, 1}, gpumem::index(0)}), c4 = fd.slice({{1, 5, 1}, gpumem::index(4)});
        std::array<std::int32_t, 4> left{}, right{};
        gpumem::copy_batch b;
        b.add(gpumem::wrap(left.data(), {4}), c0).add(gpumem::wrap(right.data(), {4}), c4);
        b.run();
        ok(b.size() == 2 && left[0] == 5 && left[3] == 20 && right[0] == 9 && right[3] == 24,
           "copy_batch: add(dst, src) twice, run(): the columns fd[1:5, 0] and fd[1:5, 4]");
        b.add(gpumem::wrap(left.data(), {4}), fd.slice({gpumem::index(0)}));
        throws([&] { b.run(); }, GPUMEM_ERROR_SHAPE_MISMATCH, "pair 2", "copy_batch::run with a bad third pair",
               "gpumem::copy_batch::run");
        gpumem::array buf = gpumem::pinned_array(ctx, {8}, gpumem::dtype::of<std::int32_t>());
        gpumem::pack({c0, c4}, buf);
        gpumem::unpack({c4, c0}, buf);
        std::vector<std::int32_t> back(30);
        fd.copy_to_host(gpumem::wrap(back.data(), {6, 5}));
        ok(back[5] == 9 && back[9] == 5 && back[20] == 24 && back[24] == 20 && back[0] == 0 && back[29] == 29,
           "pack({c0, c4}, buf), unpack({c4, c0}, buf): the columns swapped, the corners untouched");
        throws([&] { gpumem::pack({c0, c4}, gpumem::pinned_array(ctx, {7}, gpumem::dtype::of<std::int32_t>())); },
               GPUMEM_ERROR_INVALID_VALUE, "holds 28 bytes, but the 2 views take 32", "pack into a short buffer",
               "gpumem::pack");
    }
    /* ---- the memory report ---- */
    {
        gpumem::pool p(ctx);
        gpumem::memory_report before = ctx.memory_report();
        gpumem::allocation a = p.allocate(3000);
        auto d = gpumem::device_array<float>(ctx, {256});
        gpumem::memory_report r = ctx.memory_report(GPUMEM_MEMORY_DEVICE_INFO);
        ok(r.size == sizeof r && r.device_total_bytes > 0, "memory_report() sets the size; the device's total");
        is_int((long long)(r.device.bytes - before.device.bytes), 3000 + 1024, "live device bytes: the pool "
               "allocation and the array");
        is_int((long long)(r.device.count - before.device.count), 2, "two allocations");
        auto pools = ctx.memory_pools();
        ok(pools.size() == 1 && pools[0].pool == p.get() && pools[0].active_requested_bytes == 3000,
           "memory_pools(): the pool, its allocation");
        ctx.reset_memory_peaks();
        is_int((long long)ctx.memory_report().device.peak_bytes, (long long)r.device.bytes, "reset_memory_peaks()");
        throws([&] { ctx.memory_report(0x80); }, GPUMEM_ERROR_INVALID_VALUE, "flags 0x80", "memory_report(bad flags)",
               "gpumem::context::memory_report");
        ctx.set_oom_callback([](gpumem_context *, const struct gpumem_oom_info *, void *) { return 0; });
        throws([&] { gpumem::device_array<float>(ctx, {int64_t(1) << 40}); }, GPUMEM_ERROR_OUT_OF_MEMORY,
               "the out-of-memory callback ran 1 time and then declined", "the callback runs before the failure");
        ctx.set_oom_callback(nullptr);
        a.free();
        is_int((long long)ctx.memory_pools()[0].held_blocks, 1, "the freed block is held");
    }
    /* ---- issue 26: pinned_array<T> beside device_array<T>; slice() from more than a braced list; a released
     *      array says it was released ---- */
    {
        gpumem::array p = gpumem::pinned_array<double>(ctx, {3, 4});
        ok(p.kind() == GPUMEM_MEMORY_PINNED && p.dtype() == gpumem::dtype::of<double>() &&
               p.shape() == gpumem::dims{3, 4} && p.is_c_contiguous(),
           "pinned_array<double>(ctx, {3, 4}): pinned, float64, 3x4, C order");
        gpumem::array pf = gpumem::pinned_array<std::int16_t>(ctx, {3, 4}, 'F');
        ok(pf.kind() == GPUMEM_MEMORY_PINNED && pf.is_f_contiguous() && !pf.is_c_contiguous() &&
               pf.dtype() == gpumem::dtype::of<std::int16_t>(),
           "pinned_array<int16_t>(..., 'F'): Fortran order");
        int pinned = 0;
        gpumem_host_is_pinned(p.host_pointer(), 12 * sizeof(double), &pinned);
        ok(pinned == 1, "its memory is page-locked (gpumem_host_is_pinned)");
        auto span = p.host_span<double>();
        for (std::size_t i = 0; i < span.size(); i++)
            span[i] = double(i);
        gpumem::array d = gpumem::device_array<double>(ctx, {3, 4});
        d.copy_from_host(p);
        gpumem::array back = gpumem::host_array<double>({3, 4});
        d.copy_to_host(back);
        ok(back.kind() == GPUMEM_MEMORY_HOST && back.get<double>({2, 3}) == 11.0,
           "host_array<double> and a round trip through the device from the pinned array");
        ok(gpumem::mapped_array<float>(ctx, {5}).kind() == GPUMEM_MEMORY_MAPPED &&
               gpumem::managed_array<float>(ctx, {5}).kind() == GPUMEM_MEMORY_MANAGED,
           "mapped_array<float> and managed_array<float>");
        throws([&] { gpumem::pinned_array<float>(ctx, {-2}); }, GPUMEM_ERROR_NEGATIVE_DIMENSION,
               "gpumem_pinned_array", "pinned_array<float> with a negative extent", "gpumem::pinned_array");

        /* slice() from a std::vector built at run time, a pointer and count, arguments */
        std::vector<gpumem_slice> v;
        v.push_back(GPUMEM_SLICE_ALL);
        v.push_back(gpumem_slice{1, 4, 2});
        gpumem::array a = d.slice(v);
        gpumem::array b = d.slice(v.data(), v.size());
        gpumem::array c = d.slice(gpumem::all, gpumem::slice_spec(1, 4, 2));
        std::vector<gpumem::slice_spec> vs{gpumem::index(2), {gpumem::none, gpumem::none, -1}};
        gpumem::array e = d.slice(vs);
        std::array<gpumem_slice, 1> one{{gpumem::index(1)}};
        gpumem::array f = d.slice(one);
        ok(a.shape() == gpumem::dims{3, 2} && a.get<double>({2, 1}) == 11.0 && a.get<double>({0, 0}) == 1.0,
           "slice(std::vector<gpumem_slice>) is d[:, 1:4:2]");
        ok(b.shape() == a.shape() && b.device_pointer() == a.device_pointer() && b.strides() == a.strides(),
           "slice(pointer, count) is the same view");
        ok(c.shape() == a.shape() && c.device_pointer() == a.device_pointer() && c.strides() == a.strides(),
           "slice(gpumem::all, slice_spec(1, 4, 2)) too");
        ok(e.shape() == gpumem::dims{4} && e.get<double>({0}) == 11.0 && e.get<double>({3}) == 8.0,
           "slice(std::vector<slice_spec>): d[2, ::-1]");
        ok(f.shape() == gpumem::dims{4} && f.get<double>({0}) == 4.0, "slice(std::array): d[1]");
        ok(d.slice(gpumem::index(1)).get<double>({3}) == 7.0 && d.slice({{0, 2}}).shape() == gpumem::dims{2, 4},
           "slice(index(1)) as one argument, and a braced list of one slice, as before");
        ok(d.slice(static_cast<const gpumem_slice *>(nullptr), 0).shape() == d.shape(), "slice(nullptr, 0): the whole array");
        throws([&] { d.slice(static_cast<const gpumem_slice *>(nullptr), 2); }, GPUMEM_ERROR_NULL_ARGUMENT,
               "'slices' is NULL", "slice(nullptr, 2)", "gpumem::array::slice");
        throws([&] { d.slice(std::vector<gpumem_slice>(33, GPUMEM_SLICE_ALL)); }, GPUMEM_ERROR_INVALID_VALUE,
               "33 slices", "slice() of 33 slices", "gpumem::array::slice");

        /* a released array: INVALID_STATE, saying so, as what it was to the call */
        gpumem::array gone = gpumem::device_array<double>(ctx, {3, 4});
        gone.release();
        throws([&] { d.copy_from(gone); }, GPUMEM_ERROR_INVALID_STATE, "'src' was released",
               "copy_from() a released array", "gpumem::array::copy_from");
        throws([&] { gone.copy_to_host(back); }, GPUMEM_ERROR_INVALID_STATE, "the array was released",
               "copy_to_host() of a released array", "gpumem::array::copy_to_host");
        throws([&] { (void)gone.shape(); }, GPUMEM_ERROR_INVALID_STATE, "the array was released",
               "shape() of a released array", "gpumem::array::shape");
        throws([&] { (void)gpumem::to_device(ctx, gone); }, GPUMEM_ERROR_INVALID_STATE, "'host' was released",
               "to_device() of a released array", "gpumem::to_device");
        gpumem::array moved = std::move(p);
        throws([&] { gpumem::pack({a, p}, moved); }, GPUMEM_ERROR_INVALID_STATE, "'views[1]' was released",
               "pack() with a moved-from array", "gpumem::pack");
    }
    return exit_status();
}

/*
 * test-hpp.cpp - include/gpumem.hpp: the wrappers call the C functions with
 * their ownership rules (copy = retain, move, destructors end handles),
 * errors carry the status and the message, views, spans, shapes, scope
 * guards and the pmr resource over the page-locked pool.  Built by
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

#include "tap.h"

#include <unistd.h>

namespace {

int refcount(const gpumem::context &c) { return c.refcount(); }

/* Runs f, which must throw gpumem::error with status @p want and a message containing @p needle. */
template <class F>
void throws(F f, gpumem_status want, const char *needle, const char *name)
{
    try {
        f();
        ok(0, "%s: throws", name);
        diag("nothing was thrown");
    } catch (const gpumem::error &e) {
        bool good = e.status() == want && std::string(e.what()).find(needle) != std::string::npos &&
                    std::string(e.what()).find(gpumem_status_string(want)) == 0;
        ok(good, "%s: throws %s", name, gpumem_status_string(want));
        if (!good)
            diag("got %s: %s", e.name(), e.what());
    }
}

} // namespace

int main()
{
    char why[256];
    gpumem_context *raw = nullptr;
    gpumem_status st0 = gpumem_test_context(&raw, why, sizeof why);
    if (st0 != GPUMEM_OK) {
        if (gpumem_test_should_skip(st0))
            plan_skip_all(why);
        bail_out("%s", why);
    }
    plan(48);
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
               "trace_stop without a trace");
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
    }
    return exit_status();
}

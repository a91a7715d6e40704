/*
 * test-promises-hpp.cpp - include/gpumem.hpp checked against its own
 * documentation comments, as an outside user reads them: what() names "the
 * member you called", the ownership section's move-only scope guards and
 * adopt()/share() of reference-counted handles, the statuses the members
 * promise for bad arguments, moved-from and empty wrappers, and values that
 * round-trip.  Runs on the simulator (C++17).
 */
#include <gpumem.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory_resource>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "setup.h"
#include "tap.h"

namespace {

/* f must throw gpumem::error with status @p want, whose member() is @p member and whose what() starts with
 * "member: STATUS: " and contains @p needle. */
template <class F>
void throws(F f, gpumem_status want, const char *member, const char *needle, const char *name)
{
    try {
        f();
        ok(0, "%s: throws %s", name, gpumem_status_string(want));
        diag("nothing was thrown");
    } catch (const gpumem::error &e) {
        std::string what = e.what(), prefix = std::string(member) + ": " + gpumem_status_string(want) + ": ";
        bool good = e.status() == want && std::string(e.member()) == member && what.rfind(prefix, 0) == 0 &&
                    what.find(needle) != std::string::npos;
        ok(good, "%s: throws %s from %s", name, gpumem_status_string(want), member);
        if (!good)
            diag("got %s from '%s': %s", e.name(), e.member(), e.what());
    }
}

} // namespace

int main()
{
    gpumem_context *raw = test_context_or_skip_all();
    plan(55);
    gpumem::context ctx = gpumem::context::adopt(raw);

    /* ---- "Handles the C API ends exactly once are move-only ... and the scope guards
     *      gpumem::auto_synchronize and gpumem::defer_cleanup" ---- */
    ok(std::is_move_constructible_v<gpumem::auto_synchronize> && !std::is_copy_constructible_v<gpumem::auto_synchronize>,
       "auto_synchronize is move-only (movable, not copyable)");
    ok(std::is_move_constructible_v<gpumem::defer_cleanup> && !std::is_copy_constructible_v<gpumem::defer_cleanup>,
       "defer_cleanup is move-only (movable, not copyable)");
    {
        gpumem::stream s(ctx);
        auto h = gpumem::host_array({4}, gpumem::dtype::of<float>());
        auto d = gpumem::device_array<float>(ctx, {4});
        {
            gpumem::auto_synchronize a(s);
            gpumem::auto_synchronize b(std::move(a)); /* b ends the scope; a ends nothing */
            d.fill(2.5f, s);
            d.copy_to_host(h, s);
        }
        float *p = static_cast<float *>(h.host_pointer());
        ok(p[0] == 2.5f && p[3] == 2.5f, "a moved auto_synchronize synchronizes once, at the end of the scope");
        /* the scope is closed: ending another is GPUMEM_ERROR_INVALID_STATE */
        is_int(gpumem_stream_auto_synchronize_end(s.get()), GPUMEM_ERROR_INVALID_STATE,
               "the moved-from guard did not end the scope a second time");
        /* an outer scope stays open when an inner guard's end() is called twice */
        gpumem::auto_synchronize outer(s);
        {
            gpumem::auto_synchronize inner(s);
            inner.end();
            throws([&] { inner.end(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::auto_synchronize::end", "ended",
                   "auto_synchronize::end() twice");
        }
        outer.end();
        ok(1, "the outer scope was still open for its own end()");
        gpumem::stream gone(std::move(s));
        throws([&] { (void)s.query(); }, GPUMEM_ERROR_NULL_ARGUMENT, "gpumem::stream::query", "",
               "query() of a moved-from stream");
    }
    {
        gpumem::defer_cleanup outer(ctx);
        {
            gpumem::defer_cleanup a(ctx);
            gpumem::defer_cleanup b(std::move(a));
            b.end();
            throws([&] { a.end(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::defer_cleanup::end", "moved",
                   "end() of a moved-from defer_cleanup");
            throws([&] { b.end(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::defer_cleanup::end", "ended",
                   "defer_cleanup::end() twice");
        }
        outer.end();
        is_int(gpumem_defer_cleanup_end(ctx.get()), GPUMEM_ERROR_INVALID_STATE,
               "a moved defer_cleanup ends its scope once, the outer guard its own");
    }

    /* ---- "adopt() takes over a reference the caller owns, share() retains a borrowed one":
     *      gpumem::module is one of the reference-counted wrappers ---- */
    {
        static const char ptx[] = ".version 7.0\n.target sm_52\n.address_size 64\n"
                                  ".visible .entry k() { ret; }\n";
        gpumem_module *m = nullptr;
        gpumem_status st = gpumem_module_load(ctx.get(), ptx, 0, &m);
        if (st == GPUMEM_OK) {
            gpumem::module shared = gpumem::module::share(m);
            gpumem::module owned = gpumem::module::adopt(m);
            ok(static_cast<bool>(owned) && owned.get() == m && shared.get() == m,
               "module::adopt and module::share wrap the C handle; operator bool");
            gpumem::module moved(std::move(shared));
            ok(!shared && moved, "a moved-from module is empty");
        } else {
            ok(1, "# SKIP gpumem_module_load: %s", gpumem_status_string(st));
            ok(1, "# SKIP gpumem_module_load");
        }
    }

    /* ---- what() is "the member you called"; "An empty gpumem::array (after release() or detach(), moved
     *      from, or default-constructed) ... throws GPUMEM_ERROR_INVALID_STATE, whose message says that the
     *      array, or the parameter it was given as ("'src' was released"), was released" ---- */
    {
        gpumem::array empty;
        throws([&] { (void)empty.shape(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::shape",
               "the array was released", "empty.shape()");
        throws([&] { (void)empty.strides(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::strides",
               "the array was released", "empty.strides()");
        throws([&] { empty.fill(1.0f); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::fill", "the array was released",
               "empty.fill()");
        throws([&] { (void)empty.get<float>({0}); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::get",
               "the array was released", "empty.get()");
        throws([&] { empty.set<float>({0}, 1.0f); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::set",
               "the array was released", "empty.set()");
        throws([&] { (void)empty.host_span<float>(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::host_span",
               "the array was released", "empty.host_span()");
        throws([&] { (void)empty.transpose({1, 0}); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::transpose",
               "the array was released", "empty.transpose(axes)");
        gpumem::array d = gpumem::device_array<float>(ctx, {4});
        d.fill(0.0f);
        gpumem::array h = gpumem::host_array<float>({4});
        h.fill(2.0f);
        gpumem::array released = gpumem::device_array<float>(ctx, {4});
        released.release();
        throws([&] { d.copy_from(released); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::copy_from",
               "'src' was released", "copy_from(a released array)");
        throws([&] { released.copy_from(d); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::copy_from",
               "the array was released", "a released array's copy_from()");
        gpumem_array *raw_h = h.get();
        gpumem::array detached = gpumem::array::share(raw_h);
        gpumem_array_release(detached.detach());
        throws([&] { detached.copy_to(d); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::copy_to",
               "the array was released", "copy_to() of a detached array");
        gpumem::array moved_to = std::move(h);
        throws([&] { d.copy_from_host(h); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::array::copy_from_host",
               "'src' was released", "copy_from_host(a moved-from array)");
        throws([&] { (void)gpumem::device_array_like(ctx, released); }, GPUMEM_ERROR_INVALID_STATE,
               "gpumem::device_array_like", "'like' was released", "device_array_like(a released array)");
        throws([&] { (void)gpumem::pinned(ctx, {moved_to, released}); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::pinned",
               "'arrays[1]' was released", "pinned({a, released})");
        gpumem::copy_batch batch;
        batch.add(d, moved_to).add(d, released);
        throws([&] { batch.run(); }, GPUMEM_ERROR_INVALID_STATE, "gpumem::copy_batch::run",
               "'pair 1's src' was released", "copy_batch::run() with a released source");
        std::vector<float> out(4, 0.0f);
        d.copy_to_host(gpumem::wrap(out));
        ok(out[0] == 0.0f && out[3] == 0.0f, "no copy was made: the batch checked every pair first");
    }

    /* ---- the statuses the members promise ---- */
    {
        auto d = gpumem::device_array<float>(ctx, {2, 3});
        auto d2 = gpumem::device_array<float>(ctx, {2, 3});
        auto h = gpumem::host_array({2, 3}, gpumem::dtype::of<float>());
        h.fill(0.0f);
        throws([&] { d.copy_to_host(d2); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem::array::copy_to_host", "",
               "copy_to_host into a device array");
        throws([&] { d.copy_from_host(d2); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem::array::copy_from_host", "src",
               "copy_from_host from a device array");
        throws([&] { h.copy_from_host(h); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem::array::copy_from_host", "",
               "copy_from_host into a host-side *this");
        throws([&] { (void)d.get<float>({0}); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem::array::get", "",
               "get<T> with one index of a 2-D array");
        d.fill(1.0f);
        throws([&] { d.set<float>({0, 0, 0}, 7.0f); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem::array::set", "",
               "set<T> with three indices of a 2-D array");
        is_int(static_cast<long long>(d.get<float>({0, 0})), 1, "... and writes nothing");
        throws([&] { d.fill(1.0); }, GPUMEM_ERROR_DTYPE_MISMATCH, "gpumem::array::fill", "8",
               "fill with a value of another size");
        throws([&] { (void)d.host_span<float>(); }, GPUMEM_ERROR_INVALID_VALUE, "gpumem::array::host_span", "",
               "host_span of a device array (the C call's status)");
        auto cols = h.slice({gpumem::all, {0, 3, 2}});
        throws([&] { (void)cols.host_span<float>(); }, GPUMEM_ERROR_COPY_REQUIRED, "gpumem::array::host_span",
               "contiguous", "host_span of a strided view");
    }
    {
        /* dims: "a value that int64_t cannot hold throws GPUMEM_ERROR_OVERFLOW"; more than GPUMEM_MAX_NDIM values */
        throws([] { gpumem::dims d{std::size_t(1), ~std::size_t(0)}; (void)d; }, GPUMEM_ERROR_OVERFLOW,
               "gpumem::dims::dims", "int64_t", "dims of a size_t above INT64_MAX");
        std::vector<int> many(GPUMEM_MAX_NDIM + 1, 1);
        throws([&] { gpumem::dims d(many); (void)d; }, GPUMEM_ERROR_TOO_MANY_DIMENSIONS, "gpumem::dims::dims",
               std::to_string(GPUMEM_MAX_NDIM).c_str(), "dims of GPUMEM_MAX_NDIM + 1 values");
    }
    {
        /* dtype::descr "in a buffer that grows until it fits" */
        std::vector<gpumem_field> fields;
        std::vector<std::string> names;
        for (int i = 0; i < 64; i++)
            names.push_back("a_rather_long_field_name_number_" + std::to_string(i));
        for (int i = 0; i < 64; i++)
            fields.push_back(gpumem_field{names[static_cast<std::size_t>(i)].c_str(),
                                          gpumem_dtype_builtin(GPUMEM_FLOAT64), -1, 0, nullptr});
        auto rec = gpumem::dtype::record(fields.data(), fields.size());
        std::string descr = rec.descr();
        ok(descr.size() > 256 && descr.find("a_rather_long_field_name_number_63") != std::string::npos,
           "dtype::descr() of a descr longer than 256 bytes (%zu)", descr.size());
        throws([] { (void)gpumem::dtype::builtin(static_cast<gpumem_type>(999)); }, GPUMEM_ERROR_INVALID_VALUE,
               "gpumem::dtype::builtin", "", "dtype::builtin of no builtin type");
    }

    /* ---- split: "the views of a 1-D array, in order" ---- */
    {
        float host[7] = {0, 1, 2, 3, 4, 5, 6};
        auto d = gpumem::to_device(ctx, gpumem::wrap(host, {7}));
        auto pieces = d.split(3);
        ok(pieces.size() == 3 && pieces[0].size() == 3 && pieces[2].size() == 1 &&
               pieces[1].get<float>({0}) == 3.0f && pieces[2].get<float>({0}) == 6.0f,
           "split(3) of 7 elements: 3 views, in order");
    }

    /* ---- copy_batch: "a bad one throws, naming it ("pair 2"), with no destination written" ---- */
    {
        auto a = gpumem::device_array<float>(ctx, {4});
        auto b = gpumem::device_array<float>(ctx, {4});
        auto bad = gpumem::device_array<float>(ctx, {5});
        a.fill(0.0f);
        b.fill(3.0f);
        gpumem::copy_batch batch;
        batch.add(a, b).add(a, b).add(a, bad);
        throws([&] { batch.run(); }, GPUMEM_ERROR_SHAPE_MISMATCH, "gpumem::copy_batch::run", "pair 2",
               "copy_batch::run with a bad third pair");
        is_int(static_cast<long long>(a.get<float>({0})), 0, "... and no destination is written");
    }

    /* ---- pool_resource: alignment larger than a block's, bad_alloc ---- */
    {
        gpumem::host_pool hp(ctx);
        gpumem::pool_resource r(hp);
        void *p = r.allocate(100, std::size_t(1) << 16);
        ok(reinterpret_cast<std::uintptr_t>(p) % (std::size_t(1) << 16) == 0,
           "pool_resource meets an alignment larger than the block's");
        std::memset(p, 0x5a, 100);
        r.deallocate(p, 100, std::size_t(1) << 16);
        uint64_t active = hp.active_blocks();
        is_int(static_cast<long long>(active), 0, "... and gives the block back");
        bool caught = false;
        try {
            volatile std::size_t huge = SIZE_MAX - 8;
            (void)r.allocate(huge, 8);
        } catch (const std::bad_alloc &e) {
            caught = dynamic_cast<const gpumem::bad_alloc *>(&e) != nullptr &&
                     std::string(e.what()).rfind("gpumem::pool_resource::allocate: ", 0) == 0;
        }
        ok(caught, "an impossible size throws gpumem::bad_alloc (a std::bad_alloc) naming the member");
    }

    /* ---- events and streams, empty wrappers ---- */
    {
        gpumem::event e(ctx);
        ok(e.query(), "a never-recorded event is complete");
        e.record();
        e.wait(); /* empty: the default stream of the event's context */
        e.synchronize();
        ok(e.query(), "record() and wait() with empty streams work on the default stream");
        gpumem::stream s(ctx);
        gpumem::stream moved(std::move(s));
        throws([&] { s.wait(e); }, GPUMEM_ERROR_NULL_ARGUMENT, "gpumem::stream::wait", "empty",
               "wait() on a moved-from stream");
        s.destroy(); /* NULL is a no-op */
        ok(!s && moved, "destroy() of a moved-from stream is a no-op");
        gpumem::array a;
        a.release();
        ok(!a, "release() of an empty array is a no-op");
    }

    /* ---- wrap(range): "a contiguous range (std::vector, std::array, gpumem::span, ...)" ---- */
    {
        auto p = gpumem::host_array({5}, gpumem::dtype::of<int32_t>());
        for (int i = 0; i < 5; i++)
            p.set<int32_t>({i}, 10 * i);
        auto again = gpumem::wrap(p.host_span<int32_t>()); /* a temporary span */
        ok(again.size() == 5 && again.host_pointer() == p.host_pointer() && again.get<int32_t>({4}) == 40,
           "wrap() of a temporary gpumem::span views the same memory");
        std::vector<double> v{1, 2, 3};
        auto w = gpumem::wrap(v);
        ok(w.size() == 3 && w.host_pointer() == v.data() && w.dtype() == gpumem::dtype::of<double>(),
           "wrap() of a std::vector<double>");
    }

    /* ---- doc/names.md, the map users read: no deprecated member in the C++ column ---- */
    {
        const char *srcdir = std::getenv("GPUMEM_TEST_SRCDIR");
        std::string path = std::string(srcdir != nullptr ? srcdir : ".") + "/doc/names.md";
        std::FILE *f = std::fopen(path.c_str(), "r");
        std::string text;
        if (f != nullptr) {
            char buf[4096];
            std::size_t n;
            while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
                text.append(buf, n);
            std::fclose(f);
        }
        std::size_t row = text.find("| `copy_to_host(ary, stream)`");
        std::string line = row == std::string::npos ? "" : text.substr(row, text.find('\n', row) - row);
        ok(line.find("`array::copy_from_host()`") != std::string::npos &&
               line.find("`array::copy_to_device()`,") == std::string::npos,
           "doc/names.md maps numba's copy_to_device to array::copy_from_host, not the deprecated member");
    }

    /* ---- error(status) without a member ---- */
    {
        gpumem_array *out = nullptr;
        gpumem_status st = gpumem_device_array(ctx.get(), 1, nullptr, nullptr, nullptr, 'C', nullptr, &out);
        gpumem::error e(st);
        ok(std::string(e.member()).empty() && std::string(e.what()).rfind(gpumem_status_string(st), 0) == 0,
           "error(status): no member, what() starts with the status' name");
    }
    return exit_status();
}

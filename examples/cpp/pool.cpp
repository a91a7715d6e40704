// pool.cpp: pycuda's memory pools from C++.
//   c++ -std=c++17 pool.cpp $(pkg-config --cflags --libs gpumem)
//
// A device pool serves the device arrays of a context (numba's memory-manager
// plug-in), and a page-locked pool serves a std::pmr::vector through
// gpumem::pool_resource, so the host side of every copy is pinned memory.
#include <cstdio>
#include <memory_resource>
#include <numeric>
#include <vector>
#include <gpumem.hpp>

int main()
try {
    auto ctx = gpumem::context::create_default();
    gpumem::pool device_pool(ctx);
    gpumem::host_pool pinned_pool(ctx);
    gpumem::pool_resource pinned(pinned_pool);

    ctx.set_pool(&device_pool);  // device arrays of ctx now come from device_pool
    std::pmr::vector<double> x(1000, &pinned);  // elements in page-locked memory
    std::iota(x.begin(), x.end(), 0.0);

    for (int round = 0; round < 3; round++) {  // the same sizes again: the pool's blocks are reused
        gpumem::stream s(ctx);
        auto d = gpumem::to_device(ctx, gpumem::wrap(x), s);
        d.slice({{0, 500}}).fill(-1.0, s);     // d[:500] = -1, queued on s
        d.copy_to_host(gpumem::wrap(x), s);    // pinned destination: asynchronous is allowed
        s.synchronize();
    }
    double sum = std::accumulate(x.begin(), x.end(), 0.0);

    gpumem::pool_stats st = device_pool.stats();
    std::printf("sum = %g\n", sum);  // 500 * -1 + (500 + ... + 999) = 374250
    std::printf("device pool: %llu misses, %llu hits\n", (unsigned long long)st.misses,
                (unsigned long long)st.hits);
    std::printf("pinned vector from the pool: %s\n", pinned_pool.active_blocks() == 1 ? "yes" : "no");
    ctx.set_pool(nullptr);  // before the pool goes
    return 0;
} catch (const gpumem::error &e) {
    std::fprintf(stderr, "gpumem: %s\n", e.what());
    return 1;
}

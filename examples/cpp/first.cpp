// first.cpp: the README's first program in C++, with <gpumem.hpp>.
//   c++ -std=c++17 first.cpp $(pkg-config --cflags --libs gpumem)
#include <cstdio>
#include <gpumem.hpp>

int main()
try {
    auto ctx = gpumem::context::create_default();  // CUDA_DEVICE, ~/.cuda-device, else the first free GPU
    float host[4][6];
    for (int i = 0; i < 24; i++)
        host[i / 6][i % 6] = float(i);

    auto d = gpumem::to_device(ctx, gpumem::wrap(&host[0][0], {4, 6}));  // numba's to_device
    auto cols = d.slice({gpumem::all, {0, 6, 2}});                        // d[:, ::2], a view

    float out[4][3];
    cols.copy_to_host(gpumem::wrap(&out[0][0], {4, 3}));  // one strided driver copy
    std::printf("out[3] = %g %g %g\n", out[3][0], out[3][1], out[3][2]);  // 18 20 22
    return 0;  // the arrays and the context are released here, views before their base
} catch (const gpumem::error &e) {
    std::fprintf(stderr, "gpumem: %s\n", e.what());
    return 1;
}

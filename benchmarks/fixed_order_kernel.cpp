// A float32 matrix product whose every output is summed in one fixed order, whatever the
// processor and the thread count: C[i, j] = fma(A[i, K-1], B[K-1, j], ... fma(A[i, 0],
// B[0, j], 0)), one fused multiply-add per term in k order. It uses AVX2 and FMA
// instructions only (built with -mavx2 -mfma, never -march=native), so every x86-64
// processor with those sets computes the same bits. Threads split the output into column
// panels, never the inner dimension, so the thread count does not change a sum either.
// Used by benchmarks/fixed_order_product.py and fixed_order_step.py to measure what such
// a product costs.
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace {

constexpr int64_t MR = 6;    // rows of a tile: 12 accumulators, 2 loads, 1 broadcast of 16 ymm
constexpr int64_t NR = 16;   // columns of a tile: two vectors of 8 floats
constexpr int64_t KC = 256;  // inner block: a 256 x 16 panel of B (16 KiB) stays in L1

// A ROWS x 16 tile of C over k in [k0, k1): each lane adds its terms in k order onto C
// (onto zero at k0 == 0). Splitting k into blocks stores and reloads a partial sum, which
// leaves its value, and so the order of addition, unchanged. Always inlined, its loops
// over rows unrolled: otherwise GCC keeps the accumulators in memory (twice the time).
template <int ROWS>
__attribute__((always_inline)) inline void tile_vec(const float* A, const float* B, float* C,
                                                    int64_t lda, int64_t ldb, int64_t ldc,
                                                    int64_t k0, int64_t k1) {
  __m256 c[ROWS][2];
#pragma GCC unroll 6
  for (int r = 0; r < ROWS; ++r) {
    c[r][0] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(C + r * ldc);
    c[r][1] = k0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(C + r * ldc + 8);
  }
  for (int64_t k = k0; k < k1; ++k) {
    const __m256 b0 = _mm256_loadu_ps(B + k * ldb);
    const __m256 b1 = _mm256_loadu_ps(B + k * ldb + 8);
#pragma GCC unroll 6
    for (int r = 0; r < ROWS; ++r) {
      const __m256 a = _mm256_broadcast_ss(A + r * lda + k);
      c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
      c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < ROWS; ++r) {
    _mm256_storeu_ps(C + r * ldc, c[r][0]);
    _mm256_storeu_ps(C + r * ldc + 8, c[r][1]);
  }
}

// A tile of fewer than 16 columns: the same sums, one scalar fused multiply-add per term.
inline void tile_edge(const float* A, const float* B, float* C, int64_t lda, int64_t ldb,
                      int64_t ldc, int64_t k0, int64_t k1, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float acc = k0 == 0 ? 0.0f : C[r * ldc + j];
      for (int64_t k = k0; k < k1; ++k) acc = std::fma(A[r * lda + k], B[k * ldb + j], acc);
      C[r * ldc + j] = acc;
    }
}

}  // namespace

torch::Tensor fixed_mm(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "fixed_mm: shapes");
  TORCH_CHECK(a.scalar_type() == torch::kFloat && b.scalar_type() == torch::kFloat,
              "fixed_mm: float32 only");
  a = a.contiguous();
  b = b.contiguous();
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  auto c = torch::zeros({M, N}, a.options());
  const float* A = a.data_ptr<float>();
  const float* B = b.data_ptr<float>();
  float* C = c.data_ptr<float>();
  const int64_t col_tiles = (N + NR - 1) / NR;
  at::parallel_for(0, col_tiles, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t tj = t0; tj < t1; ++tj) {
      const int64_t j = tj * NR, cols = std::min(NR, N - j);
      for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t k1 = std::min(K, k0 + KC);
        for (int64_t i = 0; i < M; i += MR) {
          const int64_t rows = std::min(MR, M - i);
          if (cols < NR)
            tile_edge(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1, rows, cols);
          else
            switch (rows) {
              case 6: tile_vec<6>(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1); break;
              case 5: tile_vec<5>(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1); break;
              case 4: tile_vec<4>(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1); break;
              case 3: tile_vec<3>(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1); break;
              case 2: tile_vec<2>(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1); break;
              default: tile_vec<1>(A + i * K, B + j, C + i * N + j, K, N, N, k0, k1);
            }
        }
      }
    }
  });
  return c;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("fixed_mm", &fixed_mm, "float32 a @ b, each output summed in k order");
}

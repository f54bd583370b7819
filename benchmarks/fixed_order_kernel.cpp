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
#include <vector>

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

// Column panels [t0, t1) of C (M x N) = A (M x K) @ B (K x N), all row-major.
void panels(const float* A, const float* B, float* C, int64_t M, int64_t K, int64_t N,
            int64_t t0, int64_t t1) {
  for (int64_t tj = t0; tj < t1; ++tj) {
    const int64_t j = tj * NR, cols = std::min(NR, N - j);
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
      const int64_t k1 = std::min(K, k0 + KC);
      for (int64_t i = 0; i < M; i += MR) {
        const int64_t rows = std::min(MR, M - i);
        const float* a = A + i * K;
        float* c = C + i * N + j;
        if (cols < NR)
          tile_edge(a, B + j, c, K, N, N, k0, k1, rows, cols);
        else
          switch (rows) {
            case 6: tile_vec<6>(a, B + j, c, K, N, N, k0, k1); break;
            case 5: tile_vec<5>(a, B + j, c, K, N, N, k0, k1); break;
            case 4: tile_vec<4>(a, B + j, c, K, N, N, k0, k1); break;
            case 3: tile_vec<3>(a, B + j, c, K, N, N, k0, k1); break;
            case 2: tile_vec<2>(a, B + j, c, K, N, N, k0, k1); break;
            default: tile_vec<1>(a, B + j, c, K, N, N, k0, k1);
          }
      }
    }
  }
}

}  // namespace

// a (batch..., M, K) @ b (batch..., K, N), the same batch shape, float32. Tasks are
// (batch, column panel) pairs, so every output is summed by one thread.
torch::Tensor fixed_mm(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.dim() >= 2 && a.dim() == b.dim(), "fixed_mm: a and b of the same rank >= 2");
  TORCH_CHECK(a.sizes().slice(0, a.dim() - 2) == b.sizes().slice(0, b.dim() - 2),
              "fixed_mm: the same batch shape");
  TORCH_CHECK(a.size(-1) == b.size(-2), "fixed_mm: inner dimensions differ");
  TORCH_CHECK(a.scalar_type() == torch::kFloat && b.scalar_type() == torch::kFloat,
              "fixed_mm: float32 only");
  a = a.contiguous();
  b = b.contiguous();
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end());
  shape.back() = N;
  auto c = torch::zeros(shape, a.options());
  if (K == 0 || c.numel() == 0) return c;
  const int64_t batch = c.numel() / (M * N);
  const float* A = a.data_ptr<float>();
  const float* B = b.data_ptr<float>();
  float* C = c.data_ptr<float>();
  const int64_t col_tiles = (N + NR - 1) / NR;
  at::parallel_for(0, batch * col_tiles, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / col_tiles, tj = t % col_tiles;
      panels(A + n * M * K, B + n * K * N, C + n * M * N, M, K, N, tj, tj + 1);
    }
  });
  return c;
}

// The square root of each element of float32 x, correctly rounded (vsqrtps, sqrtss), as
// IEEE 754 requires of every processor; torch's sqrt on CPU is MKL's vector maths, which
// was measured to give other bits on an emulated AMD processor.
torch::Tensor ieee_sqrt(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat, "ieee_sqrt: float32 only");
  x = x.contiguous();
  auto y = torch::empty_like(x);
  const float* X = x.data_ptr<float>();
  float* Y = y.data_ptr<float>();
  const int64_t n = x.numel(), vec = n - n % 8;
  for (int64_t i = 0; i < vec; i += 8) _mm256_storeu_ps(Y + i, _mm256_sqrt_ps(_mm256_loadu_ps(X + i)));
  for (int64_t i = vec; i < n; ++i) Y[i] = std::sqrt(X[i]);
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("ieee_sqrt", &ieee_sqrt, "float32 square root, correctly rounded");
  m.def("fixed_mm", &fixed_mm, "float32 a @ b (batched alike), each output summed in k order");
}

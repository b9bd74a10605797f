/* compress.h — gradient compression for data-parallel training: a
 * bucket's all-reduce, with fewer bytes on the wire.  GTK-free.
 *
 *   g_autoptr (tw_compressor) z = tw_compressor_new ("topk:0.01", &error);
 *   tw_compress_member ms[] = { { .offset = 0, .numel = 784 * 128, .ndim = 2,
 *                                 .shape = { 128, 784 } },
 *                               { .offset = 784 * 128, .numel = 128, .ndim = 1,
 *                                 .shape = { 128 } } };
 *   tw_coll_tag tag = { .what = "bucket 0" };
 *   tw_compress_op *op = tw_compressor_start (z, comm, 0, buf, n, ms, 2, &tag);
 *   ... the rest of backward ...
 *   if (!tw_compressor_finish (z, op, &error))   // buf [n]: the sum over ranks
 *     ...;
 *   gint64 sent, dense;
 *   tw_compressor_take_bytes (z, &sent, &dense);  // for the step's metrics
 *
 * The result.  After finish, buf holds the sum over ranks of every rank's
 * decompressed contribution, the same on every rank bit for bit: every
 * rank decompresses the same gathered bytes in rank order with the same
 * code.  What a rank did not send this step stays in its residual (error
 * feedback, per bucket index) and is added to its next contribution, so
 * that over the steps nothing is lost: Σ_steps result + Σ_ranks residual
 * = Σ_steps Σ_ranks buf.
 *
 * Methods (spec), with the payload a rank contributes per bucket of n
 * floats (dense: 4n) and the cost on the caller's thread:
 *
 *   "topk:F"      F in (0, 1]: the k = max (1, ceil (F·n)) entries of
 *                 largest magnitude (ties: lower index first) as (int32
 *                 index, float value) pairs: 8k bytes (F = 0.01: 2% of
 *                 4n).  One all-gather.  O(n) (a radix select, 3 passes);
 *                 decompression O(p·k).
 *   "int8"        scale = max|x|/127, codes round (x/scale) in [−127, 127]:
 *                 n + 4 bytes (25%).  One all-gather.  O(n + p·n).
 *   "sign"        EF-SignSGD (Karimireddy et al. 2019; signSGD, Bernstein
 *                 et al. 2018): scale = mean|x|, one bit per entry (set:
 *                 negative; 8 per byte, lowest entry in the lowest bit):
 *                 ceil (n/8) + 4 bytes (3.1%).  One all-gather.  O(n + p·n).
 *   "powersgd:R"  PowerSGD (Vogels et al. 2019), rank R ≥ 1, one warm-
 *                 started power step: each matrix member (ndim ≥ 2, seen as
 *                 [m = shape[0], c = numel/m]) with R < min (m, c) and
 *                 R·(m + c) < m·c goes as P [m, R] and Q [c, R]: 4R(m + c)
 *                 bytes; the other members and entries no member covers go
 *                 dense (4 bytes each).  Two all-reduces, one after the
 *                 other: start posts P's (with the dense part), finish
 *                 orthonormalises P, posts Q's and blocks for it.
 *                 O(m·c·R) flops three times per matrix.
 *
 * The payload is what the bytes metric counts (tw_compressor_take_bytes).
 * What MPI's all-gather actually moves is (p − 1) times it per rank,
 * where a ring all-reduce of the dense bucket moves 2(p − 1)/p·4n: the
 * all-gather methods save wire bytes only while their ratio is below
 * 2/p (top-k at 1%: up to p = 100; sign: p ≤ 64; int8: p < 8).
 * PowerSGD's all-reduces keep the ring's scaling.
 *
 * Threads.  Different buckets may be in flight at once, started and
 * finished on any thread; one bucket index has at most one op in flight.
 * Every rank must start the same buckets in the same order (they post
 * collectives) with the same n and members.
 *
 * Ownership: the compressor is the caller's (tw_compressor_free); an op
 * is freed by tw_compressor_finish; buf and members are borrowed until
 * finish (members only during start); the tag is copied.
 */
#pragma once

#include "engine/comm/comm.h"

G_BEGIN_DECLS

typedef struct tw_compressor tw_compressor;
typedef struct tw_compress_op tw_compress_op;

/* One member of a bucket: entries [offset, offset + numel) of the bucket's
 * buffer, a tensor of that shape (row-major). */
typedef struct
{
  int64_t offset, numel;
  int ndim;
  int64_t shape[6];
} tw_compress_member;

/* spec: "topk:F", "int8", "sign" or "powersgd:R" (above).  NULL with
 * TW_COMM_ERROR_ARG naming the spec otherwise.  Free with
 * tw_compressor_free. */
tw_compressor *tw_compressor_new (const char *spec, GError **error);
/* NULL-safe.  No op may be in flight. */
void tw_compressor_free (tw_compressor *z);
/* The canonical spec: "topk:0.01", "int8", "sign", "powersgd:4".  Owned by z. */
const char *tw_compressor_name (const tw_compressor *z);

/* Start reducing buf [n] (this rank's contribution, already weighted) as
 * bucket index `bucket` (≥ 0; its residual and PowerSGD's Q are created
 * on first use and reset if n or the members change).  Compresses now, on
 * the caller's thread, posts the collective(s) and returns at once.
 * members [n_members] need not be sorted; they must lie inside buf and not
 * overlap (only PowerSGD reads them; may be NULL for the others).
 * Never NULL: errors come from finish. */
tw_compress_op *tw_compressor_start (tw_compressor *z, tw_comm *c, int bucket, float *buf,
                                     int64_t n, const tw_compress_member *members, int n_members,
                                     const tw_coll_tag *tag);
/* Waits (PowerSGD: posts the second all-reduce and waits for it too);
 * buf then holds the sum over ranks.  FALSE with the communicator's error
 * (buf is then undefined).  Frees op. */
gboolean tw_compressor_finish (tw_compressor *z, tw_compress_op *op, GError **error);
/* The payload bytes this rank contributed through z since the last call,
 * and their dense equivalent (4n per bucket reduced).  Any thread. */
void tw_compressor_take_bytes (tw_compressor *z, gint64 *sent, gint64 *dense);
/* Bucket `bucket`'s residual (n entries in *n), or NULL before its first
 * start: for tests and diagnostics.  Borrowed from z; not while the bucket
 * is in flight. */
const float *tw_compressor_residual (tw_compressor *z, int bucket, int64_t *n);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (tw_compressor, tw_compressor_free)

/* The pure parts, on one rank's data (for tests; the compressor uses them). */

/* top-k's k for a fraction f of n: max (1, ceil (f·n)), at most n. */
int64_t tw_compress_topk_k (double f, int64_t n);
/* idx [k] ← the indices of the k entries of x [n] of largest magnitude,
 * ascending; of equal magnitudes the lower indices first.  NaN counts as
 * larger than any number (so that it shows in the result). */
void tw_compress_topk_select (const float *x, int64_t n, int64_t k, int32_t *idx);
/* q [n] ← round (x/scale) clamped to [−127, 127]; returns scale =
 * max|x|/127 (0 for all zeros: q = 0; NaN if x holds a NaN or an infinity). */
float tw_compress_int8_quantize (const float *x, int64_t n, int8_t *q);
/* bits [ceil (n/8)] ← bit i%8 of byte i/8 set where x[i] < 0 (the padding
 * bits clear); returns scale = mean|x| (0 for n = 0). */
float tw_compress_sign_pack (const float *x, int64_t n, guint8 *bits);
/* out [n] += ±scale from the bits (set: −scale). */
void tw_compress_sign_add (const guint8 *bits, float scale, int64_t n, float *out);
/* Orthonormalises the columns of p [m, r] (row-major) in place by modified
 * Gram–Schmidt, column 0 first, in float64; a column that is (nearly) in
 * the span of the earlier ones becomes zero. */
void tw_compress_orthonormalize (float *p, int64_t m, int r);
/* q [c, r] ← PowerSGD's first Q for member `member` of a bucket: uniform
 * in [−1, 1) from a fixed seed of (member, c, r), the same on every rank. */
void tw_compress_powersgd_init_q (float *q, int64_t c, int r, int member);

G_END_DECLS

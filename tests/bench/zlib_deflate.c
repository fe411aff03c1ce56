/* zlib_deflate.c: zlib at work for tests/bench/real_programs_bench.py.
 *
 * `zlib_deflate KIB`: makes KIB KiB of deterministic text-like data (words
 * from a small vocabulary picked by an LCG, so that it compresses about as
 * text does), deflates it at level 6 in 16 KiB chunks as zpipe.c does,
 * inflates the result the same way and checks it against the input. Prints
 * the sizes and the CRC-32; exit code 0 when the round trip matched. No
 * files: the streams go between buffers in memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CHUNK 16384

static const char *const words[] = {
    "the ",   "branch ", "trace ", "of ",     "every ", "thread ", "is ",    "kept ",
    "in ",    "a ",      "packed ", "store ", "while ", "gdb ",    "reads ", "it\n",
};

static size_t make_input(unsigned char *buf, size_t size) {
  unsigned state = 12345;
  size_t at = 0;
  while (at < size) {
    state = state * 1103515245u + 12345u;
    const char *w = words[(state >> 16) & 15];
    size_t n = strlen(w);
    if (n > size - at) n = size - at;
    memcpy(buf + at, w, n);
    at += n;
  }
  return at;
}

/* Deflates in[0..n) into out (room for cap bytes); the compressed size, or
 * 0 on error. */
static size_t deflate_buffer(const unsigned char *in, size_t n, unsigned char *out, size_t cap) {
  z_stream s;
  memset(&s, 0, sizeof s);
  if (deflateInit(&s, 6) != Z_OK) return 0;
  size_t at = 0, written = 0;
  int flush;
  do {
    size_t take = n - at < CHUNK ? n - at : CHUNK;
    s.next_in = (unsigned char *)in + at;
    s.avail_in = (unsigned)take;
    at += take;
    flush = at == n ? Z_FINISH : Z_NO_FLUSH;
    do {
      unsigned char chunk[CHUNK];
      s.next_out = chunk;
      s.avail_out = CHUNK;
      if (deflate(&s, flush) == Z_STREAM_ERROR) return 0;
      size_t have = CHUNK - s.avail_out;
      if (written + have > cap) return 0;
      memcpy(out + written, chunk, have);
      written += have;
    } while (s.avail_out == 0);
  } while (flush != Z_FINISH);
  deflateEnd(&s);
  return written;
}

static size_t inflate_buffer(const unsigned char *in, size_t n, unsigned char *out, size_t cap) {
  z_stream s;
  memset(&s, 0, sizeof s);
  if (inflateInit(&s) != Z_OK) return 0;
  s.next_in = (unsigned char *)in;
  s.avail_in = (unsigned)n;
  size_t written = 0;
  int r;
  do {
    unsigned char chunk[CHUNK];
    s.next_out = chunk;
    s.avail_out = CHUNK;
    r = inflate(&s, Z_NO_FLUSH);
    if (r != Z_OK && r != Z_STREAM_END) return 0;
    size_t have = CHUNK - s.avail_out;
    if (written + have > cap) return 0;
    memcpy(out + written, chunk, have);
    written += have;
  } while (r != Z_STREAM_END);
  inflateEnd(&s);
  return written;
}

int main(int argc, char **argv) {
  size_t size = (size_t)(argc > 1 ? atol(argv[1]) : 256) * 1024;
  unsigned char *input = malloc(size), *packed = malloc(size + size / 8 + 1024), *back = malloc(size);
  if (!input || !packed || !back) return 2;
  make_input(input, size);
  size_t packed_size = deflate_buffer(input, size, packed, size + size / 8 + 1024);
  size_t back_size = packed_size ? inflate_buffer(packed, packed_size, back, size) : 0;
  int ok = back_size == size && memcmp(input, back, size) == 0;
  printf("%zu bytes -> %zu deflated, crc32 %08lx, round trip %s\n", size, packed_size,
         crc32(0L, input, (unsigned)size), ok ? "ok" : "FAILED");
  free(input);
  free(packed);
  free(back);
  return ok ? 0 : 1;
}

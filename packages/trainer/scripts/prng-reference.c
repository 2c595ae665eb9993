// Reference values for test/random.test.ts, from the published C code of SplitMix64 and
// xoshiro128** (Vigna, https://prng.di.unimi.it/) and the seeding and shuffle that
// src/data/random.ts documents. Build and run: cc -O2 -o /tmp/prng prng-reference.c && /tmp/prng
#include <inttypes.h>
#include <stdio.h>

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint32_t rotl(const uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

static uint32_t s[4];

static uint32_t xoshiro128starstar(void) {
  const uint32_t result = rotl(s[1] * 5, 7) * 9;
  const uint32_t t = s[1] << 9;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 11);
  return result;
}

// Random.fromSeed(seed): two SplitMix64 outputs, each split into its low and high halves.
static void seed_state(uint64_t seed) {
  uint64_t state = seed;
  uint64_t a = splitmix64(&state), b = splitmix64(&state);
  s[0] = (uint32_t)a;
  s[1] = (uint32_t)(a >> 32);
  s[2] = (uint32_t)b;
  s[3] = (uint32_t)(b >> 32);
}

// epochKey(seed, epoch) = splitmix64 first output from (splitmix64 first output from seed) + epoch.
static uint64_t epoch_key(uint64_t seed, uint64_t epoch) {
  uint64_t state = seed;
  uint64_t mixed = splitmix64(&state);
  state = mixed + epoch;
  return splitmix64(&state);
}

static uint32_t uniform(uint32_t bound) {
  const uint64_t range = 1ULL << 32;
  const uint64_t limit = range - (range % bound);
  uint32_t r;
  do r = xoshiro128starstar(); while (r >= limit);
  return r % bound;
}

static void permutation(uint32_t n, uint64_t seed, uint64_t epoch) {
  uint32_t p[64];
  for (uint32_t i = 0; i < n; i++) p[i] = i;
  seed_state(epoch_key(seed, epoch));
  for (uint32_t i = n - 1; i > 0; i--) {
    uint32_t j = uniform(i + 1), t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  printf("permutation(%u, seed %" PRIu64 ", epoch %" PRIu64 "):", n, seed, epoch);
  for (uint32_t i = 0; i < n; i++) printf(" %u", p[i]);
  printf("\n");
}

int main(void) {
  uint64_t state = 0;
  printf("splitmix64 from 0:");
  for (int i = 0; i < 3; i++) printf(" 0x%016" PRIx64, splitmix64(&state));
  printf("\n");
  seed_state(42);
  printf("xoshiro128** fromSeed(42):");
  for (int i = 0; i < 5; i++) printf(" %u", xoshiro128starstar());
  printf("\n");
  printf("epochKey(42, 0) = 0x%016" PRIx64 ", epochKey(42, 1) = 0x%016" PRIx64 "\n", epoch_key(42, 0), epoch_key(42, 1));
  permutation(10, 42, 0);
  permutation(10, 42, 1);
  permutation(16, 7, 3);
  return 0;
}

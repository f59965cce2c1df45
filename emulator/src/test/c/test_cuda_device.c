/* Devices, errors and versions of the emulated CUDA runtime. */
#include <dlfcn.h>

#include "test.h"

static void eight_devices_by_default(void) {
  int n = -1;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  CHECK_EQ(n, 8);
}

static void device_count_follows_NCCLEMU_DEVICES(void) {
  int n = -1;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  CHECK_EQ(n, 3);
  CHECK_EQ(cudaSetDevice(2), cudaSuccess);
  CHECK_EQ(cudaSetDevice(3), cudaErrorInvalidDevice);
}

static void no_devices_is_cudaErrorNoDevice(void) {
  int n = -1;
  CHECK_EQ(cudaGetDeviceCount(&n), cudaErrorNoDevice);
  CHECK_EQ(n, 0);
  CHECK_EQ(cudaSetDevice(0), cudaErrorNoDevice);
  cudaStream_t s;
  CHECK_EQ(cudaStreamCreate(&s), cudaErrorNoDevice);
}

static void set_device_rejects_invalid_ordinals(void) {
  CHECK_EQ(cudaSetDevice(-1), cudaErrorInvalidDevice);
  CHECK_EQ(cudaSetDevice(8), cudaErrorInvalidDevice);
  int d = -1;
  CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
  CHECK_EQ(d, 0);
  CHECK_EQ(cudaGetDevice(NULL), cudaErrorInvalidValue);
}

static void *report_device_of_new_thread(void *out) {
  cudaGetDevice((int *)out);
  return NULL;
}

static void current_device_is_per_thread(void) {
  CHECK_EQ(cudaSetDevice(5), cudaSuccess);
  int other = -1, mine = -1;
  pthread_t t;
  pthread_create(&t, NULL, report_device_of_new_thread, &other);
  pthread_join(t, NULL);
  cudaGetDevice(&mine);
  CHECK_EQ(mine, 5);
  CHECK_EQ(other, 0);
}

static void last_error_is_sticky_until_read(void) {
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK_EQ(cudaSetDevice(99), cudaErrorInvalidDevice);
  CHECK_EQ(cudaSetDevice(1), cudaSuccess); /* a success does not clear it */
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
}

static void versions_are_cuda_13(void) {
  int v = 0;
  CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  CHECK_EQ(v, 13000);
  CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  CHECK_EQ(v, 13000);
  CHECK_EQ(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
}

static void error_strings_and_names_are_cudas(void) {
  CHECK(strcmp(cudaGetErrorString(cudaSuccess), "no error") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidDevice), "invalid device ordinal") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorInvalidResourceHandle), "invalid resource handle") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorNotReady), "device not ready") == 0);
  CHECK(strcmp(cudaGetErrorString(cudaErrorNotSupported), "operation not supported") == 0);
  CHECK(strcmp(cudaGetErrorString((cudaError_t)12345), "unrecognized error code") == 0);
  CHECK(strcmp(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady") == 0);
  CHECK(strcmp(cudaGetErrorName(cudaErrorInvalidResourceHandle),
               "cudaErrorInvalidResourceHandle") == 0);
}

static void stream_priority_range_is_zero_to_minus_five(void) {
  int least = 1, greatest = 1;
  CHECK_EQ(cudaDeviceGetStreamPriorityRange(&least, &greatest), cudaSuccess);
  CHECK_EQ(least, 0);
  CHECK_EQ(greatest, -5);
}

/* Linked by bindings, not emulated: they load and answer cudaErrorNotSupported. */
static void not_emulated_functions_answer_not_supported(void) {
  static const char *names[] = {"cudaGetDeviceProperties", "cudaDeviceGetAttribute",
                                "cudaDeviceReset",         "cudaDeviceCanAccessPeer",
                                "cudaMemcpyPeer",          "cudaPointerGetAttributes",
                                "cudaIpcGetMemHandle",     "cudaLaunchKernel",
                                "cudaGraphLaunch",         "cudaHostRegister"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    CHECK(dlsym(RTLD_DEFAULT, names[i]) != NULL);
  typedef cudaError_t (*reset_fn)(void);
  typedef cudaError_t (*attribute_fn)(int *, int, int);
  typedef cudaError_t (*peer_fn)(void *, int, const void *, int, size_t);
  reset_fn reset = (reset_fn)dlsym(RTLD_DEFAULT, "cudaDeviceReset");
  attribute_fn attribute = (attribute_fn)dlsym(RTLD_DEFAULT, "cudaDeviceGetAttribute");
  peer_fn peer = (peer_fn)dlsym(RTLD_DEFAULT, "cudaMemcpyPeer");
  int value = -7;
  char a[4], b[4] = {0};
  REQUIRE_EQ(reset != NULL && attribute != NULL && peer != NULL, 1);
  CHECK_EQ(reset(), cudaErrorNotSupported);
  CHECK_EQ(attribute(&value, 16, 0), cudaErrorNotSupported);
  CHECK_EQ(value, -7);
  CHECK_EQ(peer(a, 1, b, 0, sizeof(a)), cudaErrorNotSupported);
  CHECK_EQ(cudaGetLastError(), cudaErrorNotSupported);
}

static const struct test_case cases[] = {
    {"eight_devices_by_default", eight_devices_by_default, NULL, NULL},
    {"device_count_follows_NCCLEMU_DEVICES", device_count_follows_NCCLEMU_DEVICES,
     "NCCLEMU_DEVICES=3", NULL},
    {"no_devices_is_cudaErrorNoDevice", no_devices_is_cudaErrorNoDevice, "NCCLEMU_DEVICES=0",
     NULL},
    {"set_device_rejects_invalid_ordinals", set_device_rejects_invalid_ordinals, NULL, NULL},
    {"current_device_is_per_thread", current_device_is_per_thread, NULL, NULL},
    {"last_error_is_sticky_until_read", last_error_is_sticky_until_read, NULL, NULL},
    {"versions_are_cuda_13", versions_are_cuda_13, NULL, NULL},
    {"error_strings_and_names_are_cudas", error_strings_and_names_are_cudas, NULL, NULL},
    {"stream_priority_range_is_zero_to_minus_five", stream_priority_range_is_zero_to_minus_five,
     NULL, NULL},
    {"not_emulated_functions_answer_not_supported", not_emulated_functions_answer_not_supported,
     NULL, NULL},
};

TEST_MAIN(cases)

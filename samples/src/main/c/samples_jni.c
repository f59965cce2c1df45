/* Hand-written JNI over libnccl.so.2 and libcudart.so.13 for the samples: JniNccl and JniCudart
 * have native methods named as the C functions (handles as longs, out-parameters as long[]),
 * Comms has methods of other names (createComm, destroyComm) that a bindings file maps. */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpu_api.h"

#define CUDA_MEMCPY_HOST_TO_DEVICE 1
#define CUDA_MEMCPY_DEVICE_TO_HOST 2

static void *ptr(jlong address) { return (void *)(intptr_t)address; }
static jlong addr(const void *p) { return (jlong)(intptr_t)p; }

static void throw_new(JNIEnv *env, const char *type, const char *message) {
    jclass c = (*env)->FindClass(env, type);
    if (c != NULL) {
        (*env)->ThrowNew(env, c, message);
    }
}

/* Stores one handle into out[0]; false (with an exception pending) when out cannot hold it. */
static int store_handle(JNIEnv *env, jlongArray out, const void *handle) {
    if (out == NULL) {
        throw_new(env, "java/lang/NullPointerException", "out-parameter array is null");
        return 0;
    }
    if ((*env)->GetArrayLength(env, out) < 1) {
        throw_new(env, "java/lang/ArrayIndexOutOfBoundsException", "out-parameter array is empty");
        return 0;
    }
    jlong value = addr(handle);
    (*env)->SetLongArrayRegion(env, out, 0, 1, &value);
    return 1;
}

/* Copies a Java ncclUniqueId; false (with an exception pending) unless it holds 128 bytes. */
static int unique_id(JNIEnv *env, jbyteArray bytes, ncclUniqueId *id) {
    if (bytes == NULL) {
        throw_new(env, "java/lang/NullPointerException", "ncclUniqueId is null");
        return 0;
    }
    if ((*env)->GetArrayLength(env, bytes) != (jsize)sizeof(id->internal)) {
        throw_new(env, "java/lang/IllegalArgumentException", "ncclUniqueId must be 128 bytes");
        return 0;
    }
    (*env)->GetByteArrayRegion(env, bytes, 0, sizeof(id->internal), (jbyte *)id->internal);
    return 1;
}

/* ---- dev.ncclguard.samples.jni.JniNccl ---- */

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclGetVersion(JNIEnv *env, jclass c, jintArray out) {
    (void)c;
    int version = 0;
    int status = ncclGetVersion(&version);
    (*env)->SetIntArrayRegion(env, out, 0, 1, &version);
    return status;
}

JNIEXPORT jstring JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclGetErrorString(JNIEnv *env, jclass c, jint result) {
    (void)c;
    return (*env)->NewStringUTF(env, ncclGetErrorString(result));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclGetUniqueId(JNIEnv *env, jclass c, jbyteArray out) {
    (void)c;
    ncclUniqueId id;
    int status = ncclGetUniqueId(&id);
    if (status == 0) {
        (*env)->SetByteArrayRegion(env, out, 0, sizeof(id.internal), (const jbyte *)id.internal);
    }
    return status;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommInitRank(JNIEnv *env, jclass c, jlongArray comm,
                                                                              jint nranks, jbyteArray commId, jint rank) {
    (void)c;
    ncclUniqueId id;
    if (!unique_id(env, commId, &id)) {
        return -1;
    }
    ncclComm_t made = NULL;
    int status = ncclCommInitRank(&made, nranks, id, rank);
    if (!store_handle(env, comm, made)) {
        return -1;
    }
    return status;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommInitAll(JNIEnv *env, jclass c, jlongArray comms,
                                                                             jint ndev, jintArray devlist) {
    (void)c;
    if (ndev < 1 || ndev > 1024 || (*env)->GetArrayLength(env, comms) < ndev) {
        throw_new(env, "java/lang/IllegalArgumentException", "comms must hold ndev (1..1024) handles");
        return -1;
    }
    ncclComm_t made[1024];
    jint *devices = devlist == NULL ? NULL : (*env)->GetIntArrayElements(env, devlist, NULL);
    int status = ncclCommInitAll(made, ndev, (const int *)devices);
    if (devices != NULL) {
        (*env)->ReleaseIntArrayElements(env, devlist, devices, JNI_ABORT);
    }
    for (jint i = 0; status == 0 && i < ndev; i++) {
        jlong value = addr(made[i]);
        (*env)->SetLongArrayRegion(env, comms, i, 1, &value);
    }
    return status;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommDestroy(JNIEnv *env, jclass c, jlong comm) {
    (void)env; (void)c;
    return ncclCommDestroy(ptr(comm));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommAbort(JNIEnv *env, jclass c, jlong comm) {
    (void)env; (void)c;
    return ncclCommAbort(ptr(comm));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclAllReduce(JNIEnv *env, jclass c, jlong send, jlong recv,
                                                                           jlong count, jint datatype, jint op,
                                                                           jlong comm, jlong stream) {
    (void)env; (void)c;
    return ncclAllReduce(ptr(send), ptr(recv), (size_t)count, datatype, op, ptr(comm), ptr(stream));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclGroupStart(JNIEnv *env, jclass c) {
    (void)env; (void)c;
    return ncclGroupStart();
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclGroupEnd(JNIEnv *env, jclass c) {
    (void)env; (void)c;
    return ncclGroupEnd();
}

/* ---- dev.ncclguard.samples.jni.JniCudart ---- */

JNIEXPORT jstring JNICALL Java_dev_ncclguard_samples_jni_JniCudart_cudaGetErrorString(JNIEnv *env, jclass c, jint error) {
    (void)c;
    return (*env)->NewStringUTF(env, cudaGetErrorString(error));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_cudaGetDeviceCount(JNIEnv *env, jclass c, jintArray out) {
    (void)c;
    int count = 0;
    int status = cudaGetDeviceCount(&count);
    (*env)->SetIntArrayRegion(env, out, 0, 1, &count);
    return status;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_cudaSetDevice(JNIEnv *env, jclass c, jint device) {
    (void)env; (void)c;
    return cudaSetDevice(device);
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_cudaMalloc(JNIEnv *env, jclass c, jlongArray out, jlong size) {
    (void)c;
    void *p = NULL;
    int status = cudaMalloc(&p, (size_t)size);
    return store_handle(env, out, p) ? status : -1;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_cudaFree(JNIEnv *env, jclass c, jlong p) {
    (void)env; (void)c;
    return cudaFree(ptr(p));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_copyToDevice(JNIEnv *env, jclass c, jlong dst,
                                                                            jfloatArray src, jint n) {
    (void)c;
    jfloat *host = (*env)->GetFloatArrayElements(env, src, NULL);
    if (host == NULL) {
        return -1;
    }
    int status = cudaMemcpy(ptr(dst), host, (size_t)n * sizeof(jfloat), CUDA_MEMCPY_HOST_TO_DEVICE);
    (*env)->ReleaseFloatArrayElements(env, src, host, JNI_ABORT);
    return status;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_copyToHost(JNIEnv *env, jclass c, jfloatArray dst,
                                                                          jlong src, jint n) {
    (void)c;
    jfloat *host = (*env)->GetFloatArrayElements(env, dst, NULL);
    if (host == NULL) {
        return -1;
    }
    int status = cudaMemcpy(host, ptr(src), (size_t)n * sizeof(jfloat), CUDA_MEMCPY_DEVICE_TO_HOST);
    (*env)->ReleaseFloatArrayElements(env, dst, host, 0);
    return status;
}

#define HANDLE_CREATE(name)                                                                         \
    JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_##name(JNIEnv *env, jclass c,   \
                                                                          jlongArray out) {         \
        (void)c;                                                                                    \
        void *h = NULL;                                                                             \
        int status = name(&h);                                                                      \
        return store_handle(env, out, h) ? status : -1;                                             \
    }

#define HANDLE_CALL(name)                                                                           \
    JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_##name(JNIEnv *env, jclass c,   \
                                                                          jlong h) {                \
        (void)env; (void)c;                                                                         \
        return name(ptr(h));                                                                        \
    }

HANDLE_CREATE(cudaStreamCreate)
HANDLE_CALL(cudaStreamSynchronize)
HANDLE_CALL(cudaStreamDestroy)
HANDLE_CALL(cudaStreamQuery)
HANDLE_CREATE(cudaEventCreate)
HANDLE_CALL(cudaEventSynchronize)
HANDLE_CALL(cudaEventQuery)
HANDLE_CALL(cudaEventDestroy)

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniCudart_cudaEventRecord(JNIEnv *env, jclass c, jlong event,
                                                                               jlong stream) {
    (void)env; (void)c;
    return cudaEventRecord(ptr(event), ptr(stream));
}

/* ---- dev.ncclguard.samples.jni.Comms: other names, mapped by a bindings file ---- */

JNIEXPORT jlong JNICALL Java_dev_ncclguard_samples_jni_Comms_createComm(JNIEnv *env, jclass c, jint nranks,
                                                                       jbyteArray commId, jint rank) {
    (void)c;
    ncclUniqueId id;
    if (!unique_id(env, commId, &id)) {
        return 0;
    }
    ncclComm_t made = NULL;
    int status = ncclCommInitRank(&made, nranks, id, rank);
    if (status != 0) {
        char message[256];
        snprintf(message, sizeof(message), "ncclCommInitRank failed: %s (%d)", ncclGetErrorString(status), status);
        throw_new(env, "java/lang/IllegalStateException", message);
        return 0;
    }
    return addr(made);
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_Comms_destroyComm(JNIEnv *env, jclass c, jlong comm) {
    (void)env; (void)c;
    return ncclCommDestroy(ptr(comm));
}

/* ---- NCCL 2.28's memory, registrations, windows and device communicators, NCCL 2.29's grow and
 * revoke (JniNccl): looked up in the loaded libnccl.so.2 at their first call, so the library loads
 * beside an NCCL that lacks them, and such a call throws UnsupportedOperationException instead of
 * ending the process with a symbol lookup error. ---- */

#include <dlfcn.h>

/* sizeof(struct ncclDevComm) of NCCL 2.29.3, the largest layout; ncclDevCommRequirements of 2.29.3 */
#define DEV_COMM_BYTES 200
#define DEV_COMM_REQS_BYTES 72

static void *nccl_function(JNIEnv *env, const char *name) {
    void *lib = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
    void *fn = lib == NULL ? NULL : dlsym(lib, name);
    if (fn == NULL) {
        char message[160];
        snprintf(message, sizeof(message), "%s is not in the loaded libnccl.so.2", name);
        throw_new(env, "java/lang/UnsupportedOperationException", message);
    }
    return fn;
}

#define NCCL_FN(type, name)                                   \
    __typeof__(type) name##_ = (__typeof__(type))nccl_function(env, #name); \
    if (name##_ == NULL) {                                    \
        return -1;                                            \
    }

/* Copies a Java byte[] of at least n bytes into out; false (with an exception pending) otherwise. */
static int struct_in(JNIEnv *env, jbyteArray bytes, void *out, jsize n) {
    if (bytes == NULL || (*env)->GetArrayLength(env, bytes) < n) {
        throw_new(env, "java/lang/IllegalArgumentException", "struct argument too short");
        return 0;
    }
    (*env)->GetByteArrayRegion(env, bytes, 0, n, (jbyte *)out);
    return 1;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclMemAlloc(JNIEnv *env, jclass c, jlongArray out,
                                                                          jlong size) {
    (void)c;
    NCCL_FN(int (*)(void **, size_t), ncclMemAlloc)
    void *p = NULL;
    int status = ncclMemAlloc_(&p, (size_t)size);
    return store_handle(env, out, p) ? status : -1;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclMemFree(JNIEnv *env, jclass c, jlong p) {
    (void)c;
    NCCL_FN(int (*)(void *), ncclMemFree)
    return ncclMemFree_(ptr(p));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommRegister(JNIEnv *env, jclass c, jlong comm,
                                                                              jlong buff, jlong size, jlongArray out) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, void *, size_t, void **), ncclCommRegister)
    void *handle = NULL;
    int status = ncclCommRegister_(ptr(comm), ptr(buff), (size_t)size, &handle);
    return store_handle(env, out, handle) ? status : -1;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommDeregister(JNIEnv *env, jclass c, jlong comm,
                                                                                jlong handle) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, void *), ncclCommDeregister)
    return ncclCommDeregister_(ptr(comm), ptr(handle));
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommWindowRegister(JNIEnv *env, jclass c, jlong comm,
                                                                                    jlong buff, jlong size,
                                                                                    jlongArray out, jint flags) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, void *, size_t, void **, int), ncclCommWindowRegister)
    void *win = NULL;
    int status = ncclCommWindowRegister_(ptr(comm), ptr(buff), (size_t)size, &win, flags);
    return store_handle(env, out, win) ? status : -1;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommWindowDeregister(JNIEnv *env, jclass c,
                                                                                      jlong comm, jlong win) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, void *), ncclCommWindowDeregister)
    return ncclCommWindowDeregister_(ptr(comm), ptr(win));
}

/* The device communicator is a struct by value in Java: copied out of NCCL's into outDevComm. */
JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclDevCommCreate(JNIEnv *env, jclass c, jlong comm,
                                                                               jbyteArray reqs, jbyteArray outDevComm) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, const void *, void *), ncclDevCommCreate)
    _Alignas(8) unsigned char r[DEV_COMM_REQS_BYTES] = {0};
    _Alignas(8) unsigned char d[DEV_COMM_BYTES] = {0};
    jsize n = reqs == NULL ? 0 : (*env)->GetArrayLength(env, reqs);
    if (n > DEV_COMM_REQS_BYTES) {
        throw_new(env, "java/lang/IllegalArgumentException", "requirements of at most 72 bytes");
        return -1;
    }
    if (!struct_in(env, reqs, r, n)) {
        return -1;
    }
    if (outDevComm == NULL || (*env)->GetArrayLength(env, outDevComm) < DEV_COMM_BYTES) {
        throw_new(env, "java/lang/IllegalArgumentException", "outDevComm must hold 200 bytes");
        return -1;
    }
    int status = ncclDevCommCreate_(ptr(comm), r, d);
    (*env)->SetByteArrayRegion(env, outDevComm, 0, DEV_COMM_BYTES, (const jbyte *)d);
    return status;
}

/* NCCL finds a device communicator by the struct's resourceWindow: a copy destroys it. */
JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclDevCommDestroy(JNIEnv *env, jclass c, jlong comm,
                                                                                jbyteArray devComm) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, const void *), ncclDevCommDestroy)
    _Alignas(8) unsigned char d[DEV_COMM_BYTES] = {0};
    if (!struct_in(env, devComm, d, DEV_COMM_BYTES)) {
        return -1;
    }
    return ncclDevCommDestroy_(ptr(comm), d);
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommGetUniqueId(JNIEnv *env, jclass c, jlong comm,
                                                                                 jbyteArray out) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, ncclUniqueId *), ncclCommGetUniqueId)
    ncclUniqueId id;
    int status = ncclCommGetUniqueId_(ptr(comm), &id);
    if (status == 0) {
        (*env)->SetByteArrayRegion(env, out, 0, sizeof(id.internal), (const jbyte *)id.internal);
    }
    return status;
}

/* uniqueId may be null: the existing ranks that were given no id. */
JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommGrow(JNIEnv *env, jclass c, jlong comm,
                                                                          jint nranks, jbyteArray uniqueId, jint rank,
                                                                          jlongArray newcomm, jlong config) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, int, const ncclUniqueId *, int, ncclComm_t *, void *), ncclCommGrow)
    ncclUniqueId id;
    if (uniqueId != NULL && !unique_id(env, uniqueId, &id)) {
        return -1;
    }
    ncclComm_t made = NULL;
    int status = ncclCommGrow_(ptr(comm), nranks, uniqueId != NULL ? &id : NULL, rank, &made, ptr(config));
    return store_handle(env, newcomm, made) ? status : -1;
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_JniNccl_ncclCommRevoke(JNIEnv *env, jclass c, jlong comm,
                                                                            jint flags) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, int), ncclCommRevoke)
    return ncclCommRevoke_(ptr(comm), flags);
}

/* ---- Comms: memory and registrations under other names, mapped by the bindings file ---- */

JNIEXPORT jlong JNICALL Java_dev_ncclguard_samples_jni_Comms_allocate(JNIEnv *env, jclass c, jlong size) {
    (void)c;
    int (*alloc)(void **, size_t) = (int (*)(void **, size_t))nccl_function(env, "ncclMemAlloc");
    void *p = NULL;
    if (alloc == NULL || alloc(&p, (size_t)size) != 0) {
        if (alloc != NULL) {
            throw_new(env, "java/lang/IllegalStateException", "ncclMemAlloc failed");
        }
        return 0;
    }
    return addr(p);
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_Comms_release(JNIEnv *env, jclass c, jlong p) {
    (void)c;
    NCCL_FN(int (*)(void *), ncclMemFree)
    return ncclMemFree_(ptr(p));
}

JNIEXPORT jlong JNICALL Java_dev_ncclguard_samples_jni_Comms_register(JNIEnv *env, jclass c, jlong comm, jlong buff,
                                                                     jlong size) {
    (void)c;
    int (*reg)(ncclComm_t, void *, size_t, void **) =
        (int (*)(ncclComm_t, void *, size_t, void **))nccl_function(env, "ncclCommRegister");
    void *handle = NULL;
    if (reg == NULL || reg(ptr(comm), ptr(buff), (size_t)size, &handle) != 0) {
        if (reg != NULL) {
            throw_new(env, "java/lang/IllegalStateException", "ncclCommRegister failed");
        }
        return 0;
    }
    return addr(handle);
}

JNIEXPORT jint JNICALL Java_dev_ncclguard_samples_jni_Comms_unregister(JNIEnv *env, jclass c, jlong comm, jlong handle) {
    (void)c;
    NCCL_FN(int (*)(ncclComm_t, void *), ncclCommDeregister)
    return ncclCommDeregister_(ptr(comm), ptr(handle));
}

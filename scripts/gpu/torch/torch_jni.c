/*
 * JNI library of scripts/gpu/torch/TorchClient.java (part "torch" of scripts/gpu-check.sh): an
 * embedded CPython in the JVM, so that PyTorch's ProcessGroupNCCL (libtorch_cuda.so, NCCL and
 * cudart linked by soname) runs on the calling Java thread, a real third-party NCCL client.
 *
 * No compile-time dependency on Python's headers: the few CPython functions used are declared here
 * and resolved with dlsym from the libpython named by the caller, which is dlopen'ed RTLD_GLOBAL
 * (extension modules such as torch._C reference libpython's symbols without linking it).
 * Builds with gcc and the JDK's include/ only:
 *   gcc -std=gnu11 -O2 -fPIC -shared -I$JDK/include -I$JDK/include/linux -o libtorchclient.so torch_jni.c -ldl -lpthread
 *
 * Python is initialised once (Py_InitializeEx(0): no signal handlers, the JVM owns them), then the
 * GIL is released, so that any Java thread may run code through PyGILState_Ensure/Release.
 * Python is never finalised: Py_FinalizeEx would run torch's atexit hooks and destructors, which
 * would destroy or abort a leaked process group (hiding the leak the check wants to see) or wait on
 * ProcessGroupNCCL's watchdog thread. The JVM's exit ends the process with Python still initialised.
 */
#include <jni.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef void (*py_initialize_ex_fn)(int);
typedef int (*py_is_initialized_fn)(void);
typedef int (*py_run_simple_string_flags_fn)(const char *, void *);
typedef int (*py_gilstate_ensure_fn)(void); /* PyGILState_STATE is an enum: an int */
typedef void (*py_gilstate_release_fn)(int);
typedef void *(*py_eval_save_thread_fn)(void); /* PyThreadState* */

static struct {
    py_run_simple_string_flags_fn run;
    py_gilstate_ensure_fn ensure;
    py_gilstate_release_fn release;
} py;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised;
static char init_error[512];

static void throw_state(JNIEnv *env, const char *msg) {
    jclass c = (*env)->FindClass(env, "java/lang/IllegalStateException");
    if (c != NULL) {
        (*env)->ThrowNew(env, c, msg);
    }
}

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (p == NULL && init_error[0] == '\0') {
        snprintf(init_error, sizeof init_error, "%s not found in libpython: %s", name, dlerror());
    }
    return p;
}

/* Loads libpython and initialises the interpreter once; returns 0 or -1 with init_error set. */
static int init_python(const char *libpython) {
    pthread_mutex_lock(&init_lock);
    if (!initialised && init_error[0] == '\0') {
        void *lib = dlopen(libpython, RTLD_NOW | RTLD_GLOBAL);
        if (lib == NULL) {
            snprintf(init_error, sizeof init_error, "dlopen(%s): %s", libpython, dlerror());
        } else {
            py_initialize_ex_fn initialize = (py_initialize_ex_fn)sym(lib, "Py_InitializeEx");
            py_is_initialized_fn is_initialized = (py_is_initialized_fn)sym(lib, "Py_IsInitialized");
            py_eval_save_thread_fn save_thread = (py_eval_save_thread_fn)sym(lib, "PyEval_SaveThread");
            py.run = (py_run_simple_string_flags_fn)sym(lib, "PyRun_SimpleStringFlags");
            py.ensure = (py_gilstate_ensure_fn)sym(lib, "PyGILState_Ensure");
            py.release = (py_gilstate_release_fn)sym(lib, "PyGILState_Release");
            if (init_error[0] == '\0') {
                if (!is_initialized()) {
                    initialize(0);
                    /* the initialising thread holds the GIL: let it go, every run takes it back */
                    save_thread();
                }
                initialised = 1;
            }
        }
    }
    int rc = initialised ? 0 : -1;
    pthread_mutex_unlock(&init_lock);
    return rc;
}

/*
 * static native int runPython(String libpython, String code): runs code as __main__ (like
 * `python3 -c`); 0 when it ran to its end, -1 when it raised (Python printed the traceback on
 * stderr). Throws IllegalStateException when libpython cannot be loaded.
 */
JNIEXPORT jint JNICALL Java_TorchClient_runPython(JNIEnv *env, jclass cls, jstring libpython, jstring code) {
    (void)cls;
    const char *lib = (*env)->GetStringUTFChars(env, libpython, NULL);
    if (lib == NULL) {
        return -1;
    }
    int ok = init_python(lib);
    (*env)->ReleaseStringUTFChars(env, libpython, lib);
    if (ok != 0) {
        throw_state(env, init_error);
        return -1;
    }
    /* modified UTF-8 equals UTF-8 for text without NUL and characters outside the BMP */
    const char *src = (*env)->GetStringUTFChars(env, code, NULL);
    if (src == NULL) {
        return -1;
    }
    int state = py.ensure();
    int rc = py.run(src, NULL);
    py.run("import sys\nsys.stdout.flush()\nsys.stderr.flush()\n", NULL);
    py.release(state);
    (*env)->ReleaseStringUTFChars(env, code, src);
    return rc;
}

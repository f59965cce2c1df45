package dev.ncclguard.it.apps;

/** A JVM that never touches NCCL or CUDA. */
public final class NoGpuApp {
    private NoGpuApp() {
    }

    public static void main(String[] args) {
        System.out.println("hello");
    }
}

package dev.ncclguard.samples;

/** Runs one sample scenario: {@code java -jar ncclguard-samples.jar <scenario>}. */
public final class Samples {
    private Samples() {
    }

    public static void main(String[] args) {
        System.out.println("no scenarios yet");
    }
}

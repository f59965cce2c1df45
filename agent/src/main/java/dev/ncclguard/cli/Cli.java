package dev.ncclguard.cli;

/** The agent jar's command line. */
public final class Cli {
    private Cli() {
    }

    public static void main(String[] args) {
        System.out.println("ncclguard");
    }
}

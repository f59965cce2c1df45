package dev.ncclguard.weave;

/** A native method whose calls woven code reports to the hooks: its site number and its slots. */
public interface WrappedMethod {
    int id();

    Slots slots();
}

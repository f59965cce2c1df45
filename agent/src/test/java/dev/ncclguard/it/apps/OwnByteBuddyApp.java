package dev.ncclguard.it.apps;

import net.bytebuddy.ByteBuddy;

/**
 * An application that brings its own Byte Buddy: prints which jar it came from and uses it, then
 * runs {@link RawFunctionApp} so the agent has something to track.
 */
public final class OwnByteBuddyApp {
    private OwnByteBuddyApp() {
    }

    public static void main(String[] args) throws Exception {
        System.out.println("byte-buddy from " + ByteBuddy.class.getProtectionDomain().getCodeSource().getLocation());
        Class<?> made = new ByteBuddy().subclass(Object.class).name("app.Made").make()
                .load(OwnByteBuddyApp.class.getClassLoader()).getLoaded();
        System.out.println("made " + made.getName());
        RawFunctionApp.main(args);
    }
}

package dev.ncclguard.junit;

import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestPlan;

/**
 * Registered with the JUnit Platform Launcher through {@code META-INF/services}: puts the emulator
 * on the test class path under the JVM before the first test class is initialized (discovery loads
 * test classes without initializing them), with the launch's configuration parameters
 * ({@code junit-platform.properties}, system properties, the build tool's). A problem is printed
 * here (a listener's exception only gets a warning from the launcher) and fails each class that
 * uses {@link NcclGuardExtension}.
 */
public final class EmulatorListener implements TestExecutionListener {
    @Override
    public void testPlanExecutionStarted(TestPlan plan) {
        Emulator.setUp(plan.getConfigurationParameters()::get);
    }
}

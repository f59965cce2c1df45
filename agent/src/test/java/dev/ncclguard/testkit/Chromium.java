package dev.ncclguard.testkit;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Headless Chromium for the merge page's tests: the DOM it builds and a screenshot of what it draws
 * ({@link Images} counts its colors). One run gives both: Chromium takes seconds to start on a
 * small machine.
 */
public final class Chromium {
    public record Result(int status, String dom, String err, long millis) {
    }

    private Chromium() {
    }

    /** Opens {@code page} in a window of the given size; a screenshot goes to {@code png} when not null. */
    public static Result render(Path page, int width, int height, Path png) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(executable());
        // as root (CI containers) Chromium needs --no-sandbox; the page is our own file
        cmd.addAll(List.of("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                "--user-data-dir=" + Files.createTempDirectory("chromium-profile"), "--window-size=" + width + "," + height));
        if (png != null) {
            Files.createDirectories(png.toAbsolutePath().getParent());
            Files.deleteIfExists(png);
            cmd.add("--screenshot=" + png.toAbsolutePath());
        }
        cmd.add("--dump-dom");
        cmd.add(page.toUri().toString());
        Path out = Files.createTempFile("chromium-out", ".txt");
        Path err = Files.createTempFile("chromium-err", ".txt");
        long start = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            fail("Chromium did not finish in 120 s: " + cmd + "\n" + Files.readString(err));
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        Result r = new Result(p.exitValue(), Files.readString(out), Files.readString(err), millis);
        Files.deleteIfExists(out);
        Files.deleteIfExists(err);
        return r;
    }

    public static String executable() {
        String configured = System.getenv("CHROMIUM");
        List<String> names = configured != null ? List.of(configured) : List.of("chromium", "chromium-browser");
        for (String name : names) {
            for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
                Path candidate = name.contains("/") ? Path.of(name) : Path.of(dir, name);
                if (Files.isExecutable(candidate)) {
                    return candidate.toString();
                }
            }
        }
        return fail("headless Chromium is needed to render the merge page: apt-get install chromium"
                + " (Debian; .ci/run installs it), or set CHROMIUM to its path");
    }
}

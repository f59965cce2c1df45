package dev.ncclguard.testkit;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;

/** What a screenshot shows, counted in pixels of one color: the merge page's bars, waits and gaps. */
public final class Images {
    private Images() {
    }

    /** The screenshot at {@code png}, which must exist. */
    public static BufferedImage read(Path png) throws IOException {
        assertTrue(Files.isRegularFile(png), "no screenshot at " + png);
        BufferedImage image = ImageIO.read(png.toFile());
        assertTrue(image != null, "not an image ImageIO reads: " + png);
        return image;
    }

    /** The pixels of exactly the color {@code rgb} (0xRRGGBB; alpha ignored). */
    public static int pixels(BufferedImage image, int rgb) {
        int n = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                if ((image.getRGB(x, y) & 0xffffff) == rgb) {
                    n++;
                }
            }
        }
        return n;
    }
}

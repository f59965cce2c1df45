package dev.ncclguard.config;

import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * The {@code config=PATH} option's file: options in Java properties format (UTF-8), one
 * {@code key=value} a line, so that a value may hold ',' (which separates the agent arguments).
 * Its values come after the agent arguments and before system properties (docs/spec.md).
 */
final class ConfigFile {
    private ConfigFile() {
    }

    /**
     * The file's options, each value without trailing white space (properties keep it, and an
     * invisible space would make "on " a bad value).
     *
     * @param keys the option keys a file may set ({@code config} is not one of them)
     * @throws OptionsException a line naming the file and what is wrong with it
     */
    static Map<String, String> read(String path, Collection<String> keys, String source) {
        Properties props = new Properties();
        try (InputStream in = Files.newInputStream(Path.of(path));
                Reader reader = new InputStreamReader(in, StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT))) {
            props.load(reader);
        } catch (NoSuchFileException e) {
            throw bad(path, source, "no such file");
        } catch (AccessDeniedException e) {
            throw bad(path, source, "permission denied");
        } catch (CharacterCodingException e) {
            throw bad(path, source, "it is not UTF-8 text");
        } catch (IOException | RuntimeException e) {
            // IllegalArgumentException: a malformed \\uXXXX escape; IOException: a directory, ...
            throw bad(path, source, Files.isDirectory(Path.of(path)) ? "it is a directory" : String.valueOf(e.getMessage()));
        }
        Map<String, String> out = new HashMap<>();
        for (String key : props.stringPropertyNames()) {
            if (key.equals("config")) {
                throw bad(path, source, "option config cannot be set in a config file");
            }
            if (!keys.contains(key)) {
                throw bad(path, source, "unknown option '" + key + "' (valid: " + String.join(", ", keys) + ")");
            }
            out.put(key, props.getProperty(key).stripTrailing());
        }
        return out;
    }

    private static OptionsException bad(String path, String source, String why) {
        String from = source.equals("argument") ? "" : " (" + source + ")";
        return new OptionsException("ncclguard: invalid config file '" + path + "' for option config" + from + ": "
                + why + "; expected a readable properties file of key=value lines");
    }
}

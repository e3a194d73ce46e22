package rlock.interop;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * An ACL recipe of docs/commands.md ("Permissions (ACL)"), read from the
 * document itself as testkit/src/acl_recipe.rs reads it, so that the Java
 * suite runs exactly the lines users copy: a fenced block of
 * {@code ACL SETUSER} lines of one user after {@code <!-- acl-recipe: NAME -->}.
 */
final class AclRecipe {
    final List<List<String>> lines;

    private AclRecipe(List<List<String>> lines) {
        this.lines = lines;
    }

    /** The recipe {@code name}, or an error naming what is wrong with the document. */
    static AclRecipe read(String name) {
        String marker = "<!-- acl-recipe: " + name + " -->";
        String doc = commandsDoc();
        int at = doc.indexOf(marker);
        if (at < 0) {
            throw new IllegalStateException("docs/commands.md has no " + marker);
        }
        List<String> rest = doc.substring(at + marker.length()).strip().lines().toList();
        if (rest.isEmpty() || !rest.get(0).startsWith("```")) {
            throw new IllegalStateException(marker + " is not followed by a fenced block");
        }
        List<List<String>> lines = new ArrayList<>();
        for (String line : rest.subList(1, rest.size())) {
            if (line.startsWith("```")) {
                break;
            }
            if (!line.isBlank()) {
                // Split at whitespace, as redis-cli splits them: recipes quote nothing.
                lines.add(Arrays.asList(line.strip().split("\\s+")));
            }
        }
        if (lines.isEmpty()) {
            throw new IllegalStateException(marker + ": an empty recipe");
        }
        for (List<String> line : lines) {
            boolean setUser = line.size() > 2 && line.get(0).equals("ACL") && line.get(1).equals("SETUSER");
            if (!setUser || !line.get(2).equals(lines.get(0).get(2))) {
                throw new IllegalStateException(marker + ": every line is ACL SETUSER of one user: " + line);
            }
        }
        return new AclRecipe(lines);
    }

    /** The user the recipe sets up. */
    String user() {
        return lines.get(0).get(2);
    }

    /** The password the recipe gives the user (its {@code >password} rule). */
    String password() {
        return lines.stream().flatMap(List::stream).filter(arg -> arg.startsWith(">")).findFirst()
                .map(arg -> arg.substring(1))
                .orElseThrow(() -> new IllegalStateException("the recipe sets no password"));
    }

    /** Runs every line on {@code admin}, a connection of a user who may run ACL. */
    void apply(Resp admin) {
        for (List<String> line : lines) {
            Object reply = admin.cmd(line.toArray());
            if (!"OK".equals(reply)) {
                throw new IllegalStateException(line + ": " + reply);
            }
        }
    }

    /** docs/commands.md, found from the working directory (interop/java under Maven) upwards. */
    private static String commandsDoc() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path doc = dir.resolve("docs/commands.md");
            if (Files.isRegularFile(doc)) {
                try {
                    return Files.readString(doc);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        throw new IllegalStateException("no docs/commands.md above " + Path.of("").toAbsolutePath());
    }
}

import Foundation

/// Checks made before creating a directory a node needs, so that a file in the way is reported as the mistake it
/// is (a wrong `--data-dir`, a stray file in the data directory) instead of as mkdir's "File exists" or Foundation's
/// `NSCocoaErrorDomain Code=516`, which leave the person guessing which path is wrong.
public enum DirectoryPath {
    /// The first of `path` and its ancestors, from the top, that exists but is not a directory (nor a link to one):
    /// what stops `path` from being created or used as a directory. Nil when nothing is in the way.
    public static func blockingFile(on path: String) -> String? {
        let components = (path as NSString).pathComponents
        var prefix = ""
        for component in components {
            prefix = prefix.isEmpty ? component : (prefix as NSString).appendingPathComponent(component)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: prefix, isDirectory: &isDirectory) else { return nil }
            if !isDirectory.boolValue { return prefix }
        }
        return nil
    }

    /// The topmost of `path` and its ancestors that does not exist: what creating `path` makes, and all that
    /// removing it must take away to leave the file system as it was. Nil when `path` exists.
    public static func firstMissing(on path: String) -> String? {
        let components = (path as NSString).pathComponents
        var prefix = ""
        for component in components {
            prefix = prefix.isEmpty ? component : (prefix as NSString).appendingPathComponent(component)
            if !FileManager.default.fileExists(atPath: prefix) { return prefix }
        }
        return nil
    }
}

/// An error that knows the status it crosses the wire as: a module's own error type (the TSP's, the issuer's, the
/// wallet's). A handler that lets one escape unmapped still answers with that status; before, the server answered
/// any error but `RPCError` with INTERNAL, so an issuer whose disk was full looked to the TSP like a broken issuer
/// rather than one out of space.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError: RPCErrorConvertible {
    public var rpcError: RPCError { self }
}

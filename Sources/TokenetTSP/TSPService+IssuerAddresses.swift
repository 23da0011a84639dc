import TokenetNode

extension TSPService {
    /// Says at start which registered issuers this start leaves without an address, and which `--issuer ID=`
    /// routes name an issuer that has not registered.
    ///
    /// Registration warns about a missing address too, but an issuer registers again only when its node restarts,
    /// which may be days after a TSP restart with a route lost from its command line; meanwhile the stand-in would
    /// decide that issuer's cards with nothing in the log to say why. A route for an unregistered id is noted (not
    /// warned about: the issuer may simply not have started yet), because a misspelt id looks exactly like that.
    func reportIssuerAddresses() {
        let registered: [IssuerRecord]
        do {
            registered = try store.issuers()
        } catch {
            logger.warning("cannot read the registered issuers", ["error": "\(error)"])
            return
        }
        for issuer in registered.sorted(by: { $0.id < $1.id }) where !issuers.hasAddress(for: issuer.id) {
            logger.warning(
                "no address for registered issuer \(issuer.id) (tsp-node --issuer \(issuer.id)=HOST:PORT): the "
                    + "stand-in rule decides its cards", ["issuer": issuer.id])
        }
        let ids = Set(registered.map(\.id))
        for id in issuers.routes.keys.sorted() where !ids.contains(id) {
            logger.info(
                "an address is given for issuer \(id), which has not registered (yet)",
                ["issuer": id, "registered": ids.isEmpty ? "none" : ids.sorted().joined(separator: ",")])
        }
    }
}

import TokenetNode

extension InspectOptions {
    /// The options `tokenet call` would parse from `ADDR --cacert … --cert operator.pem --key operator.key
    /// --deadline …`, for the demo, which speaks to the nodes as the operator with the certificates it generated.
    init(operatorAt address: HostPort, pkiDirectory: String, deadline: Duration?) {
        self.init(identity: "operator", at: address, pkiDirectory: pkiDirectory, deadline: deadline)
    }

    /// The same with another certificate of the directory: `ROLE.pem` and `ROLE.key` (a scenario's `identity`).
    init(identity: String, at address: HostPort, pkiDirectory: String, deadline: Duration?) {
        self.address = address
        operands = []
        transport = .mutualTLS(
            TLSFiles(
                caFile: "\(pkiDirectory)/ca.pem", certificateFile: "\(pkiDirectory)/\(identity).pem",
                keyFile: "\(pkiDirectory)/\(identity).key"))
        self.deadline = deadline
        caOrigin = "the PKI in \(pkiDirectory)"
    }
}

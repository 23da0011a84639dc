import TokenetNode

extension InspectOptions {
    /// The options `tokenet call` would parse from `ADDR --cacert … --cert operator.pem --key operator.key
    /// --deadline …`, for the demo, which speaks to the nodes as the operator with the certificates it generated.
    init(operatorAt address: HostPort, pkiDirectory: String, deadline: Duration) {
        self.address = address
        operands = []
        transport = .mutualTLS(
            TLSFiles(
                caFile: "\(pkiDirectory)/ca.pem", certificateFile: "\(pkiDirectory)/operator.pem",
                keyFile: "\(pkiDirectory)/operator.key"))
        self.deadline = deadline
    }
}

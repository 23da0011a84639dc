import TokenetIssuer
import TokenetNode

NodeMain.run(.issuer, makeListener: RPCNodeListener.factory(services: IssuerNode.services))

import TokenetNode
import TokenetTSP

NodeMain.run(.tsp, makeListener: RPCNodeListener.factory(services: TSPNode.services))

import TokenetNode
import TokenetWallet

NodeMain.run(.wallet, makeListener: RPCNodeListener.factory(services: WalletNode.services))

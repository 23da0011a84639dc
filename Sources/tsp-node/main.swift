import TokenetNode

NodeMain.run(.tsp)

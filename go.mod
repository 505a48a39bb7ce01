module rocetor

go 1.26.8

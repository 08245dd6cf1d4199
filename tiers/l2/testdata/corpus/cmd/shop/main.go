// Command shop serves the shop's HTTP API on :8080.
package main

import (
	"log"
	"net/http"
	"os"

	"example.com/shop/inventory"
	"example.com/shop/server"
)

func main() {
	stock := inventory.NewStock()
	stock.Restock("TEA-0042", 10)
	log.Fatal(http.ListenAndServe(":8080", server.New(stock, os.Getenv("SHOP_SECRET"))))
}

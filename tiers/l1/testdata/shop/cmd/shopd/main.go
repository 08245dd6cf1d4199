// Command shopd runs the shop's server.
package main

import (
	"flag"
	"log"
	"net/http"

	"example.com/shop/inventory"
	"example.com/shop/pricing"
	"example.com/shop/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	store := inventory.New(inventory.Config{Limit: 100})
	if err := store.Add(inventory.Item{SKU: "box-1", Name: "Box", Quantity: 3}); err != nil {
		log.Fatal(err)
	}
	log.Print(inventory.Summary(store), " packaging ", pricing.Packaging(pricing.Box{Side: 2}), pricing.Packaging(&pricing.Tube{Radius: 1}))
	srv := server.NewServer(store, *addr)
	log.Fatal(http.ListenAndServe(srv.Addr, srv.Routes()))
}

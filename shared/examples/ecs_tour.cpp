#include "ecsnet/ecs/ecs.hpp"
#include <iostream>
using namespace ecsnet::ecs;
struct Position { float x, y; };
struct Velocity { float x, y; };
struct Frozen {};
int main() {
    auto w = World::make();
    auto e = w->create();
    w->emplace<Position>(e, 1.f, 2.f);
    w->emplace<Velocity>(e, 1.f, 0.f);
    auto h = w->handle(e);
    for (auto [ent, p, v] : w->view<Position, const Velocity>(exclude<Frozen>)) { p.x += v.x; std::cout << ent << " " << p.x << "\n"; }
    w->view<const Position>().each([](Entity en, const Position& p){ std::cout << en << p.y << "\n"; });
    auto cs = w->take_changes();
    std::cout << cs.created.size() << " " << h.valid() << " " << w->signature_of(e).to_string() << "\n";
    Scheduler s(1.0/30);
    s.add("move", component_access{}.reads<Velocity>().writes<Position>(), [](SystemContext& c){
        c.world.view<Position, const Velocity>().each([&](Entity en, Position& p, const Velocity& v){ p.x += v.x; c.commands.emplace<Position>(c.commands.create(), 0.f, 0.f); (void)en; });
    });
    s.run(*w);
    auto cs2 = w->take_changes();
    std::cout << cs2.created.size() << " " << cs2.components.size() << " " << w->alive() << "\n";
    w->destroy(e);
    std::cout << h.valid() << "\n";
    try { (void)w->get<Position>(e); } catch (const error& er) { std::cout << er.what() << "\n"; }
}
